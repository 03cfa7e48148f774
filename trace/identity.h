// Communicator identity: the same 64-bit id on every member rank, derived only from what every
// member sees identically (the ncclUniqueId, or the parent's id plus the split's position and
// color). All functions are pure and thread-safe. An id is never 0 (0 means "no communicator").
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclscope::trace {

uint64_t CommIdFromUniqueId(const void* unique_id_bytes, size_t size);

// split_index: how many splits/shrinks of this parent the rank has made, this one included. Every
// member calls ncclCommSplit collectively and in the same order, so the index agrees across ranks.
uint64_t CommIdFromSplit(uint64_t parent_id, uint32_t split_index, int color);

uint64_t CommIdFromShrink(uint64_t parent_id, uint32_t split_index);

// ncclCommInitAll creates ndev communicators in one process from no unique id.
uint64_t CommIdFromInitAll(uint64_t process_nonce, uint32_t call_index);

}  // namespace ncclscope::trace
