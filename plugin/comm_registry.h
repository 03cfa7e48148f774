// Communicator creation and teardown bookkeeping (cold path): identity, names, the per-comm state
// in the map, and the comm table entry of the ring.
#pragma once

#include <cstdint>
#include <string>

#include <nccl.h>

#include "plugin/runtime.h"

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
};

// Creates the state of a new communicator handle, maps it and publishes its comm table entry (at
// once when rank and size are known, else when CompleteDeferredComm learns them). Learns the global
// rank from the first unique-id communicator when the launcher did not say. Returns the state or
// null (map full: one warning). Thread-safe; never throws.
CommState* RegisterComm(Runtime& rt, ncclComm_t comm, const CommSpec& spec) noexcept;

// A non-blocking creation has completed (ncclCommGetAsyncError said ncclSuccess): asks NCCL for
// rank, size and device and publishes the entry. Thread-safe for distinct states.
void CompleteDeferredComm(Runtime& rt, ncclComm_t comm, CommState* state) noexcept;

// The handle is gone (destroyed or aborted). Thread-safe; never throws.
void ForgetComm(Runtime& rt, ncclComm_t comm) noexcept;

// config->commName when config is a valid ncclConfig_t that has one, else fallback.
std::string CommNameFromConfig(const ncclConfig_t* config, const std::string& fallback);

// Packs two 32-bit values into a record's aux word (first in the high half).
inline uint64_t PackAux(int high, int low) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32) | static_cast<uint32_t>(low);
}

}  // namespace ncclscope::plugin
