#include "hang_detector/detectors/p2p_stall.h"

#include <algorithm>
#include <string>

#include "hang_detector/detectors/stall_stage.h"

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;

enum class P2pStart : uint8_t { kStarted, kNotStarted, kUnknown };

struct SideStart {
  P2pStart state = P2pStart::kUnknown;
  uint32_t marker = kNoRecord;
};

// Whether this side's device work of #seq started: its p2p_device_start (direction `op`, peer
// `peer` as comm rank), or its absence while the profiler watched the communicator on this file
// and numbered every start of that direction and peer it wrote.
SideStart Examine(const RankFile& f, uint64_t comm_id, uint64_t seq, OpType op, int peer) {
  SideStart out;
  bool watched = false;
  for (uint32_t p = f.size(); p-- > 0;) {
    const OpShape& sh = f.ShapeAt(p);
    if (sh.comm_id != comm_id) continue;
    const auto kind = static_cast<OpType>(sh.op);
    if (kind == OpType::kProfilerAttach) watched = true;
    if (kind != OpType::kP2pDeviceStart || sh.redop != static_cast<int32_t>(op) ||
        sh.peer != peer) {
      continue;
    }
    const uint64_t s = f.ops[p].seq;
    if (s == seq) {
      out.state = P2pStart::kStarted;
      out.marker = p;
      return out;
    }
    if (s == 0) return out;  // a start the probe could not number may be this one
    watched = true;
  }
  if (watched) out.state = P2pStart::kNotStarted;
  return out;
}

}  // namespace

void CheckP2PDeviceStalls(const Context& ctx, std::vector<Verdict>* out) {
  const JobIndex& index = ctx.index;
  for (const CommModel& comm : index.comms()) {
    for (const P2PLane& lane : comm.p2p_lanes) {
      if (!lane.has_sends || !lane.has_recvs) continue;
      const uint32_t a = lane.sends.file, b = lane.recvs.file;
      const uint64_t hi = std::min(lane.sends.EndSeq(), lane.recvs.EndSeq());
      for (uint64_t seq = std::max(lane.sends.first_seq, lane.recvs.first_seq); seq < hi; ++seq) {
        const uint32_t sp = lane.sends.PosOf(seq), rp = lane.recvs.PosOf(seq);
        if (sp == kNoRecord || rp == kNoRecord) continue;
        if (!IsWaitingState(index.StateOf(a, sp)) || !IsWaitingState(index.StateOf(b, rp))) {
          continue;
        }
        if (!ctx.Stalled(a, sp) || !ctx.Stalled(b, rp)) continue;
        // Queued behind another waiting operation: that one's verdict (or a cycle) explains it.
        if (StreamBlocker(index, a, sp) >= 0 || StreamBlocker(index, b, rp) >= 0) continue;
        const RankFile& fa = index.files()[a];
        const RankFile& fb = index.files()[b];
        const SideStart sa = Examine(fa, comm.id, seq, OpType::kSend, lane.dst);
        const SideStart sb = Examine(fb, comm.id, seq, OpType::kRecv, lane.src);
        if (sa.state == P2pStart::kUnknown || sb.state == P2pStart::kUnknown) continue;
        const int ra = ctx.RankOf(a), rb = ctx.RankOf(b);
        Verdict v;
        v.cls = VerdictClass::kDeviceStall;
        v.comm_id = comm.id;
        v.comm_name = ctx.CommName(comm);
        v.op = "send";
        v.seq = seq;
        v.since_s =
            ctx.SinceS(std::min(fa.Wall(fa.At(sp).t_enter_ns), fb.Wall(fb.At(rp).t_enter_ns)));
        v.culprits = {ra, rb};
        SortUnique(&v.culprits);
        v.tie = true;
        const std::string what =
            "send #" + std::to_string(seq) + " of " + RankList({ra}) + " to " + RankList({rb});
        bool localized = false;
        if (sa.state != sb.state) {
          const bool send_stuck = sa.state == P2pStart::kNotStarted;
          const int culprit = send_stuck ? ra : rb, victim = send_stuck ? rb : ra;
          v.culprits = {culprit};
          v.victims = {victim};
          v.tie = false;
          v.summary = "device work of " + std::string(send_stuck ? "the send" : "the receive") +
                      " (" + what + ") never started on " + RankList({culprit}) +
                      " (its stream is blocked before it); it started on " + RankList({victim}) +
                      ", which waits for it";
          v.stall.stage = "not-started";
          v.stall.rank = culprit;
          v.stall.peer = victim;
          v.stall.side = send_stuck ? "send" : "recv";
          const uint32_t started_file = send_stuck ? b : a;
          const uint32_t marker = send_stuck ? sb.marker : sa.marker;
          v.evidence.push_back(
              ctx.RecordEvidence(started_file, marker, "device work of " + what + " started"));
          localized = true;
        } else if (sa.state == P2pStart::kStarted) {
          localized = ResolveStallStage(ctx, comm, seq, {a, b}, &v, true);
        }
        if (!localized) continue;
        v.evidence.push_back(ctx.RecordEvidence(a, sp, DescribeOp(fa.At(sp)) + " waiting"));
        v.evidence.push_back(ctx.RecordEvidence(b, rp, DescribeOp(fb.At(rp)) + " waiting"));
        out->push_back(std::move(v));
        break;  // the oldest stuck pair of this lane: later ones wait behind it
      }
    }
  }
}

}  // namespace ncclscope::hang_detector
