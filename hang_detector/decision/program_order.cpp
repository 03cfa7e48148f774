#include "hang_detector/decision/program_order.h"

namespace ncclscope::hang_detector {
namespace {

bool Siblings(const CommModel& a, const CommModel& b) {
  if (a.id == b.id) return true;
  if (a.parent_id != 0 && a.split_index != 0) {
    return a.parent_id == b.parent_id && a.split_index == b.split_index;
  }
  return !a.name.empty() && a.name == b.name;
}

// +1 when file f issued a's collective before b's, -1 for the reverse, 0 when it cannot tell.
int Vote(const CollectiveStand& a, const CollectiveStand& b, uint32_t f) {
  const auto pa = a.at.find(f);
  const auto pb = b.at.find(f);
  if (pa == a.at.end() || pb == b.at.end()) return 0;
  const bool has_a = pa->second != kNoRecord;
  const bool has_b = pb->second != kNoRecord;
  if (has_a && (!has_b || pa->second < pb->second)) return 1;
  if (has_b && (!has_a || pb->second < pa->second)) return -1;
  return 0;
}

}  // namespace

CollectiveStand StandOn(const JobIndex& index, uint64_t comm_id, uint64_t seq) {
  CollectiveStand s;
  s.comm = index.FindComm(comm_id);
  if (s.comm == nullptr) return s;
  for (const CommModel& c : index.comms()) {
    if (!Siblings(*s.comm, c)) continue;
    for (const CollLane& lane : c.lanes) {
      const uint32_t pos = lane.PosOf(seq);
      if (pos != kNoRecord) {
        s.at[lane.file] = pos;
      } else if (index.StateAt(lane, seq) == OpState::kNotIssued) {
        s.at[lane.file] = kNoRecord;
      }
    }
  }
  return s;
}

Order ProgramOrder(const CollectiveStand& a, const CollectiveStand& b) {
  if (a.comm == nullptr || b.comm == nullptr || a.comm == b.comm) return Order::kUnknown;
  int votes = 0;
  for (const CollLane& lane : a.comm->lanes) votes += Vote(a, b, lane.file);
  for (const CollLane& lane : b.comm->lanes) votes += Vote(a, b, lane.file);
  if (votes == 0) return Order::kUnknown;
  return votes > 0 ? Order::kFirstBefore : Order::kSecondBefore;
}

}  // namespace ncclscope::hang_detector
