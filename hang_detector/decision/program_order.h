// Which of two collectives comes first in the ranks' programs. When one rank stops issuing, every
// communicator it belongs to stalls behind it: its tp peers wait at tp #N, its dp peers at dp #M.
// The rank's first missed operation is the one to show, and the other ranks' own programs tell
// which it is, without trusting the times at which the waits began.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "hang_detector/ingest/job_index.h"

namespace ncclscope::hang_detector {

// Where the ranks stand on collective #seq of a communicator's family: for each file with a lane
// on the communicator or a sibling, its record position of #seq, or kNoRecord when its lane ends
// before #seq (not issued yet). Files whose record was lost are absent. Siblings: communicators
// split from the same parent by the same split call, else communicators of the same non-empty name
// (tp groups of different colors run the same program).
struct CollectiveStand {
  const CommModel* comm = nullptr;  // null when the communicator is unknown
  std::unordered_map<uint32_t, uint32_t> at;
};
CollectiveStand StandOn(const JobIndex& index, uint64_t comm_id, uint64_t seq);

enum class Order : uint8_t { kUnknown, kFirstBefore, kSecondBefore };

// The order of two collectives on different communicators, by the vote of the members of either
// one (their programs are the culprit's: same pipeline stage, same layers): a rank that issued one
// and not yet the other, or both in that order, votes for the one it issued first. kUnknown when
// nobody can tell or the votes tie.
Order ProgramOrder(const CollectiveStand& a, const CollectiveStand& b);

}  // namespace ncclscope::hang_detector
