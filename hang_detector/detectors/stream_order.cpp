// Stream order: the device runs a stream's operations one after another, so an operation queued
// behind one that waits cannot have started. Used by the send/recv wait-for graph and to tell a
// stalled collective from one merely queued behind another stall.
#include "hang_detector/detectors/detectors.h"

namespace ncclscope::hang_detector {

// Nearest earlier operation still waiting on the same stream, outside the same group (the ops of
// one group progress together); once a completed op is met nothing earlier can block.
int64_t StreamBlocker(const JobIndex& index, uint32_t file, uint32_t pos) {
  const RankFile& f = index.files()[file];
  const trace::RecordData& me = f.At(pos);
  for (int64_t p = static_cast<int64_t>(pos) - 1; p >= 0; --p) {
    const trace::RecordData& r = f.At(static_cast<uint32_t>(p));
    const auto op = static_cast<trace::OpType>(r.op);
    if (r.stream != me.stream || !(trace::IsCollective(op) || trace::IsP2P(op))) continue;
    if (me.group_id != 0 && r.group_id == me.group_id) continue;
    const OpState s = index.StateOf(file, static_cast<uint32_t>(p));
    if (s == OpState::kCompleted) return -1;
    if (IsWaitingState(s)) return p;
  }
  return -1;
}

}  // namespace ncclscope::hang_detector
