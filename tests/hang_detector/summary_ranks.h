// Reads back the ranks a verdict's one-line summary names, so tests can hold the text to its
// fields: a person acts on the summary, a program on the culprit list, and the two must agree.
// Not thread-safe (no shared state, but no guarantee beyond that is needed by tests).
#pragma once

#include <string>
#include <vector>

namespace ncclscope::testing {

// Every rank list of the summary ("rank 5", "ranks 0,2-7", "ranks 3-2019:32 (127 ranks)",
// "rank file0" for a file without a rank, as hang_detector::RankList writes them), flattened.
std::vector<int> RanksNamed(const std::string& summary);
// The ranks the summary names as the cause: before "never issued it", "did not issue the matching",
// "died or exited", "froze", "never joined", ... or after "device work never completed on",
// "wait-for cycle through", "transfers of".
std::vector<int> RanksNamedAsCulprits(const std::string& summary);
// "" when the summary agrees with the culprit list: it names no rank as a culprit that the list
// does not hold, and (unless the verdict is a tie) it names every culprit. Otherwise what differs.
std::string SummaryDisagreement(const std::string& summary, const std::vector<int>& culprits,
                                bool tie);

}  // namespace ncclscope::testing
