// Communicator creation and teardown bookkeeping (cold path): identity, names, the per-comm state
// in the map, and the comm table entry of the ring.
#pragma once

#include <cstdint>
#include <string>

#include <nccl.h>

#include "plugin/runtime/runtime.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {

struct CommSpec {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  uint32_t origin = 0;  // trace::kCommFrom*
  uint32_t split_index = 0;
  int rank = -1;  // -1: ask NCCL (pncclCommUserRank / pncclCommCount) on the new handle
  int nranks = -1;
  int color = -1;
  int key = -1;
  int cuda_device = -1;  // -1: ask NCCL (pncclCommCuDevice) when the creation has completed
  bool complete = true;  // false while a non-blocking creation is in progress
  std::string name;
  uint32_t table_entry = trace::kNoCommEntry;  // from AnnounceComm
};

// A creation call is about to start (it may block until every member joins): publishes the
// communicator's comm table entry as pending, with its id, origin, parent, split position and name
// (rank and size when the call gives them), so a rank stuck inside the call shows what it waits
// for. Returns the entry, for spec.table_entry of RegisterComm or for WithdrawComm;
// trace::kNoCommEntry when the table is full. Cold path; thread-safe; never throws.
uint32_t AnnounceComm(Runtime& rt, const CommSpec& spec) noexcept;

// The creation announced as `entry` made no communicator (it failed): readers skip its entry.
// kNoCommEntry is ignored. Thread-safe; never throws.
void WithdrawComm(Runtime& rt, uint32_t entry) noexcept;

// Creates the state of a new communicator handle, maps it and publishes its comm table entry (at
// once when rank and size are known, else when CompleteDeferredComm learns them): the announced
// entry (spec.table_entry) completed in place, else a new one. Learns the global rank from the
// first unique-id communicator when the launcher did not say. Returns the state or null (map full:
// one warning, the announced entry withdrawn). Thread-safe; never throws.
CommState* RegisterComm(Runtime& rt, ncclComm_t comm, const CommSpec& spec) noexcept;

// A non-blocking creation has completed (ncclCommGetAsyncError said ncclSuccess): asks NCCL for
// rank, size and device and publishes the entry. Thread-safe for distinct states.
void CompleteDeferredComm(Runtime& rt, ncclComm_t comm, CommState* state) noexcept;

// The handle is gone (destroyed or aborted). Thread-safe; never throws.
void ForgetComm(Runtime& rt, ncclComm_t comm) noexcept;

// config->commName when config is a valid ncclConfig_t that has one (magic, and a size that covers
// the field: a config built against an older nccl.h may lack it), at most kMaxConfigNameBytes of
// it, else fallback. May throw std::bad_alloc.
std::string CommNameFromConfig(const ncclConfig_t* config, const std::string& fallback);

// How much of a commName is read: a name is never that long, and an unterminated one is not read
// without end. The ring keeps the first trace::kCommNameBytes - 1 bytes.
inline constexpr size_t kMaxConfigNameBytes = 1024;

// Packs two 32-bit values into a record's aux word (first in the high half).
inline uint64_t PackAux(int high, int low) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32) | static_cast<uint32_t>(low);
}

}  // namespace ncclscope::plugin
