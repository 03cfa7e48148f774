// Small all-gathers among the ranks of one segment, through its board: the join barrier of
// communicator creation and the (color, key) exchange of ncclCommSplit. All ranks must run the
// same rounds in the same order, as with NCCL's bootstrap network.
#pragma once

#include <cstdint>

#include "sim/emulator/comm_layout.h"

namespace ncclsim {

// Publishes this rank's kBlobBytes of `blob` for `round` (1, 2, ...). Never blocks.
void bootstrapPublish(const SegmentView& seg, int rank, uint64_t round, const void* blob);

// True once every rank published `round`; then copies all blobs (nranks * kBlobBytes) into out
// when out is not null. Never blocks.
bool bootstrapPoll(const SegmentView& seg, int nranks, uint64_t round, void* out);

// Publish, then wait, sleeping, until all ranks published. Unbounded on purpose: a rank that never
// arrives must hang the others, as it does on NCCL.
void bootstrapAllGather(const SegmentView& seg, int rank, int nranks, uint64_t round,
                        const void* blob, void* out);

}  // namespace ncclsim
