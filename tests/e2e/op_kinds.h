// The operations `ncclscope dump --json` names in its records, by kind.
#pragma once

#include <set>
#include <string>

namespace ncclscope::testing {

// NCCL's collectives.
inline const std::set<std::string> kCollectives = {"allreduce", "broadcast",     "reduce",
                                                   "allgather", "reducescatter", "alltoall",
                                                   "gather",    "scatter"};

// Whether a record of `op` is work on the device: a collective, a send or a receive.
inline bool IsDeviceWork(const std::string& op) {
  return kCollectives.count(op) != 0 || op == "send" || op == "recv";
}

}  // namespace ncclscope::testing
