// Exit codes of ncclscope-sim-rank, shared with the launcher that explains them.
#pragma once

#include <string_view>

namespace ncclscope::sim {

enum RankExit : int {
  kRankOk = 0,
  kRankUsage = 2,             // bad arguments, unreadable or invalid scenario
  kRankWrongResult = 3,       // self-check found a wrong value
  kRankLibraryError = 4,      // an NCCL or CUDA call returned an error
  kRankBootstrapTimeout = 5,  // rank 0's unique id never appeared
};

inline std::string_view rankExitMeaning(int code) {
  switch (code) {
    case kRankUsage:
      return "bad arguments or scenario";
    case kRankWrongResult:
      return "wrong result";
    case kRankLibraryError:
      return "NCCL or CUDA call failed";
    case kRankBootstrapTimeout:
      return "bootstrap timeout (no unique id from rank 0)";
    default:
      return "";
  }
}

}  // namespace ncclscope::sim
