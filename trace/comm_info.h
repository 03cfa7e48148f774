// A communicator as the comm table describes it, in plain (non-atomic) form.
#pragma once

#include <cstdint>
#include <string>

namespace ncclscope::trace {

struct CommInfo {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  uint32_t origin = 0;  // kCommFrom*
  int rank = -1;
  int nranks = -1;
  int color = -1;
  int key = -1;
  uint32_t split_index = 0;
  int cuda_device = -1;
  int64_t created_monotonic_ns = 0;
  uint64_t handle = 0;
  std::string name;  // truncated to fit kCommNameBytes - 1
  // Its creation call had not returned when the entry was read (kCommEntryPending): id, origin,
  // parent, color, key, split index and name are final; rank, nranks, cuda_device and handle may
  // still be unknown (-1, 0), and created_monotonic_ns is when the call was entered.
  bool pending = false;
};

}  // namespace ncclscope::trace
