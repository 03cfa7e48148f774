#include "bench/synth_node.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "trace/clock.h"
#include "trace/identity.h"
#include "trace/ring_writer.h"

namespace ncclscope::bench {
namespace {

using trace::OpType;

constexpr int64_t kMs = 1000000;
constexpr int64_t kStepNs = 50 * kMs;  // one training step
constexpr int64_t kSlotNs = 2 * kMs;   // between two calls of a step
// Records must be stamped after their file's creation, as a real writer's are, and files are
// created during the whole generation: the job's clock starts this far ahead of now. Its digests
// carry that clock and the reader shifts them onto its own (docs/digest.md), so the verdicts read
// as if the job were observed at the moment of each fetch.
constexpr int64_t kLeadNs = 3600000 * kMs;

}  // namespace

struct SynthNodeJob::Counters {
  uint64_t coll[4] = {};
  uint64_t p2p[2][64] = {};  // [send?][peer stage]
};

bool SynthNodeJob::Init(const SynthNodeOptions& options, std::string* error) {
  options_ = options;
  const Topology& t = options_.topo;
  if (t.tp <= 0 || t.pp <= 0 || t.pp > 64 || t.dp <= 0 || options_.ranks_per_node <= 0 ||
      t.World() % options_.ranks_per_node != 0 || options_.records < 100 ||
      options_.ring_records < 64 || options_.hang_age_s < 0) {
    *error =
        "no job: tp, pp (<= 64), dp and ranks per node must be positive, the world a multiple of "
        "the ranks per node, at least 100 records and 64 ring slots";
    return false;
  }
  if (options_.culprit < 0) {
    const int middle = t.World() / 2 + 3;
    options_.culprit = middle - t.Stage(middle) * t.tp;
  }
  if (options_.culprit >= t.World()) {
    *error = "culprit " + std::to_string(options_.culprit) + " is not a rank of the job";
    return false;
  }
  double per_step = 0.1;  // the world allreduce every tenth step
  for (int stage = 0; stage < t.pp; ++stage) {
    per_step += static_cast<double>(StepProgram(t, stage, 0).size()) / t.pp;
  }
  stall_step_ = std::max<int64_t>(1, static_cast<int64_t>((options_.records - 4) / per_step) - 2);
  t0_ = trace::MonotonicNs() + kLeadNs;
  wall_offset_ = trace::RealtimeNs() - trace::MonotonicNs();
  const char world_unique_id[] = "synth_node world unique id";
  world_id_ = trace::CommIdFromUniqueId(world_unique_id, sizeof world_unique_id);
  if (options_.hang) {
    outcome_ = SimulateStall(t, stall_step_, options_.culprit, Fault::kMissing);
    int64_t last_step = stall_step_;
    for (const std::vector<IssuedOp>& ops : outcome_.ops) {
      for (const IssuedOp& op : ops) last_step = std::max(last_step, op.step);
    }
    now_mono_ = StepNs(last_step + 1) + static_cast<int64_t>(options_.hang_age_s * 1e9);
  } else {
    outcome_.ops.assign(static_cast<size_t>(t.World()), {});
    now_mono_ = StepNs(stall_step_) + 10 * kMs;
  }
  return true;
}

int64_t SynthNodeJob::StepNs(int64_t step) const {
  return t0_ + step * kStepNs;
}

uint64_t SynthNodeJob::CommId(int rank, CommKind kind) const {
  const Topology& t = options_.topo;
  switch (kind) {
    case CommKind::kWorld:
      return world_id_;
    case CommKind::kTp:
      return trace::CommIdFromSplit(world_id_, 1, rank / t.tp);
    case CommKind::kPp:
      return trace::CommIdFromSplit(world_id_, 2, rank / (t.tp * t.pp) * t.tp + rank % t.tp);
    case CommKind::kDp:
      return trace::CommIdFromSplit(world_id_, 3, rank % (t.tp * t.pp));
  }
  return 0;
}

bool SynthNodeJob::WriteRank(int rank, const std::string& dir, std::string* error) const {
  const Topology& t = options_.topo;
  trace::RingOptions o;
  o.dir = dir;
  o.record_capacity = options_.ring_records;
  o.global_rank = rank;
  o.local_rank = rank % options_.ranks_per_node;
  o.world_size = t.World();
  o.job_id = "synth-node";
  o.host = Host(rank / options_.ranks_per_node);
  std::unique_ptr<trace::RingWriter> w;
  for (int attempt = 0; attempt < 3 && w == nullptr; ++attempt) {  // name nonces may collide
    w = trace::RingWriter::Create(o, error);
  }
  if (w == nullptr) return false;

  // The world communicator and its tp, pp and dp splits, created before step 0.
  const struct {
    CommKind kind;
    const char* name;
    int comm_rank, nranks, color;
  } defs[] = {{CommKind::kWorld, "world", rank, t.World(), -1},
              {CommKind::kTp, "tp", rank % t.tp, t.tp, rank / t.tp},
              {CommKind::kPp, "pp", t.Stage(rank), t.pp, rank / (t.tp * t.pp) * t.tp + rank % t.tp},
              {CommKind::kDp, "dp", rank / (t.tp * t.pp), t.dp, rank % (t.tp * t.pp)}};
  trace::RecordData d{};
  d.dtype = d.redop = d.peer = -1;
  d.tid = static_cast<uint32_t>(1000 + rank);
  for (uint32_t i = 0; i < 4; ++i) {
    trace::CommInfo c;
    c.id = CommId(rank, defs[i].kind);
    c.origin = i == 0 ? trace::kCommFromUniqueId : trace::kCommFromSplit;
    c.parent_id = i == 0 ? 0 : world_id_;
    c.rank = defs[i].comm_rank;
    c.nranks = defs[i].nranks;
    c.key = i == 0 ? -1 : defs[i].comm_rank;
    c.split_index = i;
    c.cuda_device = rank % options_.ranks_per_node;
    c.created_monotonic_ns = t0_ - (1000 - 100 * int64_t{i}) * kMs;
    c.handle = 0x5000 + i;
    c.name = defs[i].name;
    w->AddComm(c);
    d.op = static_cast<uint32_t>(i == 0 ? OpType::kCommInitRank : OpType::kCommSplit);
    d.comm_id = world_id_;
    d.seq = i;
    const auto low = static_cast<uint32_t>(i == 0 ? t.World() : defs[i].comm_rank);
    const auto high = static_cast<uint32_t>(i == 0 ? rank : defs[i].color);
    d.aux = uint64_t{high} << 32 | low;
    d.t_enter_ns = c.created_monotonic_ns - 50 * kMs;
    d.t_exit_ns = c.created_monotonic_ns;
    w->Append(d, false);
  }

  Counters n;
  auto write = [&](int64_t step, uint32_t slot_index, bool completed) {
    const Slot s = StepProgram(t, t.Stage(rank), step)[slot_index];
    trace::RecordData r{};
    r.op = static_cast<uint32_t>(s.op);
    r.comm_id = CommId(rank, s.comm);
    const bool p2p = s.op == OpType::kSend || s.op == OpType::kRecv;
    r.seq = p2p ? ++n.p2p[s.op == OpType::kSend][s.peer_stage] : ++n.coll[static_cast<int>(s.comm)];
    r.count = s.count;
    r.dtype = s.dtype;
    r.redop = s.redop;
    r.peer = p2p ? s.peer_stage : -1;
    r.stream = 0x7f0000000000ULL + static_cast<uint64_t>(rank) * 0x100;
    // Hosts drift by up to 50 us; a collective completes at the same moment everywhere.
    const int64_t at = StepNs(step) + slot_index * kSlotNs;
    r.t_enter_ns = at - (rank * 7919) % 50000;
    r.t_exit_ns = r.t_enter_ns + 6000;
    r.flags = trace::kFlagCompletionTracked;
    r.tid = d.tid;
    const uint64_t index = w->Append(r, true);
    if (completed) w->CompleteDevice(index, at + 1500000);
  };
  for (int64_t step = 0; step < stall_step_; ++step) {
    const auto slots = static_cast<uint32_t>(StepProgram(t, t.Stage(rank), step).size());
    for (uint32_t i = 0; i < slots; ++i) write(step, i, true);
  }
  for (const IssuedOp& op : outcome_.ops[static_cast<size_t>(rank)]) {
    write(op.step, op.slot, op.completed);
  }
  // The writer's heartbeat thread beats every 100 ms.
  w->Heartbeat(now_mono_ - (rank * 31 % 100) * kMs);
  return true;
}

bool SynthNodeJob::WriteNode(int node, const std::string& dir, std::string* error) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *error = dir + ": " + ec.message();
    return false;
  }
  for (int i = 0; i < options_.ranks_per_node; ++i) {
    if (!WriteRank(node * options_.ranks_per_node + i, dir, error)) return false;
  }
  return true;
}

}  // namespace ncclscope::bench
