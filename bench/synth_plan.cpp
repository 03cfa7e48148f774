#include "bench/synth_plan.h"

#include <unordered_map>

namespace ncclscope::bench {
namespace {

using trace::OpType;
constexpr int32_t kBfloat16 = 9;
constexpr int32_t kFloat32 = 7;
constexpr int32_t kSum = 0;
constexpr int64_t kWorldEvery = 10;
// Steps simulated past the culprit's; the world allreduce every kWorldEvery steps stops every
// rank well before.
constexpr int64_t kMaxExtraSteps = 3 * kWorldEvery;

bool IsColl(OpType op) {
  return op != OpType::kSend && op != OpType::kRecv;
}

// Matching key of a collective: communicator instance and sequence number; of a send/recv: both
// global ranks and the step (one transfer per direction and step).
uint64_t CollKey(const Topology& t, int rank, CommKind kind, uint64_t seq) {
  uint64_t group = 0;
  if (kind == CommKind::kTp) group = rank / t.tp;
  if (kind == CommKind::kDp) group = rank % (t.tp * t.pp);
  return uint64_t{1} << 63 | static_cast<uint64_t>(kind) << 56 | group << 36 | seq;
}
uint64_t P2PKey(int src, int dst, int64_t step) {
  return static_cast<uint64_t>(src) << 44 | static_cast<uint64_t>(dst) << 24 |
         static_cast<uint64_t>(step);
}

int Members(const Topology& t, CommKind kind) {
  return kind == CommKind::kWorld ? t.World() : kind == CommKind::kTp ? t.tp : t.dp;
}

struct RankSim {
  int rank = 0;
  int64_t step = 0;
  uint32_t next_slot = 0;
  size_t head = 0;
  bool stopped = false;
  uint64_t seq[4] = {};  // collectives issued so far per CommKind
  std::vector<uint64_t> keys;
  std::vector<IssuedOp> ops;
};

}  // namespace

std::vector<Slot> StepProgram(const Topology& t, int stage, int64_t step) {
  std::vector<Slot> p;
  auto tp = [&](OpType op, uint64_t count) {
    p.push_back({op, CommKind::kTp, count, kBfloat16, op == OpType::kAllGather ? -1 : kSum});
  };
  auto p2p = [&](OpType op, int peer) {
    p.push_back({op, CommKind::kPp, 1u << 22, kBfloat16, -1, peer});
  };
  // Forward: receive activations, four tensor-parallel allreduces, pass them on.
  if (stage > 0) p2p(OpType::kRecv, stage - 1);
  for (int i = 0; i < 4; ++i) tp(OpType::kAllReduce, 1u << 22);
  if (stage < t.pp - 1) p2p(OpType::kSend, stage + 1);
  // Backward: receive gradients, eight tensor-parallel collectives, pass them back.
  if (stage < t.pp - 1) p2p(OpType::kRecv, stage + 1);
  for (int i = 0; i < 4; ++i) tp(OpType::kAllReduce, 1u << 22);
  for (int i = 0; i < 2; ++i) tp(OpType::kAllGather, 1u << 20);
  for (int i = 0; i < 2; ++i) tp(OpType::kReduceScatter, 1u << 20);
  if (stage > 0) p2p(OpType::kSend, stage - 1);
  // Data-parallel gradient sync, and now and then the loss across the job.
  p.push_back({OpType::kReduceScatter, CommKind::kDp, 1u << 24, kFloat32, kSum});
  p.push_back({OpType::kAllGather, CommKind::kDp, 1u << 24, kBfloat16, -1});
  if (step % kWorldEvery == kWorldEvery - 1) {
    p.push_back({OpType::kAllReduce, CommKind::kWorld, 1, kFloat32, kSum});
  }
  return p;
}

uint64_t CollectivesBefore(const Topology& t, int stage, CommKind kind, int64_t steps) {
  uint64_t n = 0;
  for (const Slot& s : StepProgram(t, stage, 0)) n += IsColl(s.op) && s.comm == kind;
  n *= static_cast<uint64_t>(steps);
  if (kind == CommKind::kWorld) n = static_cast<uint64_t>(steps / kWorldEvery);
  return n;
}

Outcome SimulateStall(const Topology& t, int64_t stall_step, int culprit, Fault fault) {
  std::vector<RankSim> ranks(t.World());
  for (int r = 0; r < t.World(); ++r) {
    RankSim& s = ranks[r];
    s.rank = r;
    s.step = stall_step;
    for (int k = 0; k < 4; ++k) {
      s.seq[k] = CollectivesBefore(t, t.Stage(r), static_cast<CommKind>(k), stall_step);
    }
  }
  Outcome out;
  // The culprit's fault is at the first tp collective after its step's pipeline transfers.
  const std::vector<Slot> culprit_prog = StepProgram(t, t.Stage(culprit), stall_step);
  uint32_t fault_slot = 0;
  for (uint32_t i = 0; i < culprit_prog.size(); ++i) {
    if (!IsColl(culprit_prog[i].op)) fault_slot = i + 1;
  }
  while (culprit_prog[fault_slot].comm != CommKind::kTp) ++fault_slot;

  bool changed = true;
  while (changed) {
    changed = false;
    for (RankSim& s : ranks) {  // issue whatever each host can
      while (!s.stopped) {
        const std::vector<Slot> prog = StepProgram(t, t.Stage(s.rank), s.step);
        if (s.next_slot == prog.size()) {
          if (s.head < s.ops.size() || s.step >= stall_step + kMaxExtraSteps) break;
          ++s.step;
          s.next_slot = 0;
          continue;
        }
        const Slot& slot = prog[s.next_slot];
        const bool at_fault =
            s.rank == culprit && s.step == stall_step && s.next_slot == fault_slot;
        if (at_fault && fault == Fault::kMissing) {
          s.stopped = true;
          break;
        }
        uint64_t key;
        if (IsColl(slot.op)) {
          const uint64_t seq = ++s.seq[static_cast<int>(slot.comm)];
          key = CollKey(t, s.rank, slot.comm, seq);
          if (at_fault) out.culprit_seq = seq;
        } else {
          const int peer = t.AtStage(s.rank, slot.peer_stage);
          key = slot.op == OpType::kSend ? P2PKey(s.rank, peer, s.step)
                                         : P2PKey(peer, s.rank, s.step);
        }
        s.keys.push_back(key);
        s.ops.push_back({s.step, s.next_slot, false, at_fault});
        ++s.next_slot;
        changed = true;
      }
    }
    // Complete every operation that all its participants have at the head of their streams.
    std::unordered_map<uint64_t, std::vector<int>> heads;
    for (const RankSim& s : ranks) {
      if (s.head < s.ops.size()) heads[s.keys[s.head]].push_back(s.rank);
    }
    for (auto& [key, members] : heads) {
      const RankSim& first = ranks[members[0]];
      const Slot slot = StepProgram(t, t.Stage(first.rank),
                                    first.ops[first.head].step)[first.ops[first.head].slot];
      const int needed = IsColl(slot.op) ? Members(t, slot.comm) : 2;
      bool odd = false;
      for (int r : members) odd = odd || ranks[r].ops[ranks[r].head].odd;
      if (static_cast<int>(members.size()) < needed || odd) continue;
      for (int r : members) {
        ranks[r].ops[ranks[r].head++].completed = true;
      }
      changed = true;
    }
  }
  out.ops.resize(ranks.size());
  for (RankSim& s : ranks) out.ops[s.rank] = std::move(s.ops);
  if (fault == Fault::kMissing) {
    out.culprit_seq = CollectivesBefore(t, t.Stage(culprit), CommKind::kTp, stall_step) + 1;
    for (uint32_t i = 0; i < fault_slot; ++i)
      out.culprit_seq += culprit_prog[i].comm == CommKind::kTp;
  }
  return out;
}

}  // namespace ncclscope::bench
