// How verdict text names a list of ranks: a person reads the headline in seconds, so a 4096-rank
// job's victims read as ranges and short lists stay as they are. Used by the detectors' summaries
// and the text form alike. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ncclscope::hang_detector {

// "rank 5", "ranks 0,2,4", "ranks 0-7", "ranks 3-2019:32,2083-4067:32 (127 ranks)", where a-b:s
// is a, a + s, ..., b as in Slurm's array ranges.
std::string RankList(const std::vector<int>& ranks);

}  // namespace ncclscope::hang_detector
