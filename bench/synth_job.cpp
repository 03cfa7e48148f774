// synth_job: writes the ring files of a large synthetic job with one injected culprit, through the
// real RingWriter, so `ncclscope analyze` can be measured at scale (bench/run_scale_bench.sh).
// The job is tp x pp x dp ranks (default 8 x 4 x 128 = 4096) with about --records records each;
// device completions are stamped, heartbeats stop together as if the launcher killed the job, and
// the writer pid is this program's, gone once it exits.
// Usage: synth_job DIR [--tp 8] [--pp 4] [--dp 128] [--records 10000] [--culprit RANK]
//                      [--fault missing|desync] [--threads 2]
// Prints one line "culprit: <class> rank <R> on tp #<N>" and one "records: <total>".
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/synth_plan.h"
#include "trace/clock.h"
#include "trace/identity.h"
#include "trace/ring_writer.h"

namespace ncclscope::bench {
namespace {

using trace::OpType;

struct Args {
  std::string dir;
  Topology topo;
  int64_t records = 10000;
  int culprit = -1;  // default: a stage-0 rank in the middle of the job
  Fault fault = Fault::kMissing;
  int threads = 2;
};

constexpr int64_t kMs = 1000000;
constexpr int64_t kStepNs = 50 * kMs;            // one training step
constexpr int64_t kSlotNs = 2 * kMs;             // between two calls of a step
constexpr int64_t kKilledAfterNs = 60000 * kMs;  // how long the job hung before it was killed

struct Job {
  Args args;
  int64_t stall_step = 0;
  Outcome outcome;
  int64_t t0 = 0;  // monotonic time of step 0
  int64_t t_kill = 0;
  uint64_t world_id = 0;
  int64_t StepNs(int64_t step) const { return t0 + step * kStepNs; }
};

uint64_t CommId(const Job& job, int rank, CommKind kind) {
  const Topology& t = job.args.topo;
  switch (kind) {
    case CommKind::kWorld:
      return job.world_id;
    case CommKind::kTp:
      return trace::CommIdFromSplit(job.world_id, 1, rank / t.tp);
    case CommKind::kPp:
      return trace::CommIdFromSplit(job.world_id, 2, rank / (t.tp * t.pp) * t.tp + rank % t.tp);
    case CommKind::kDp:
      return trace::CommIdFromSplit(job.world_id, 3, rank % (t.tp * t.pp));
  }
  return 0;
}

void AddComms(const Job& job, int rank, trace::RingWriter* w) {
  const Topology& t = job.args.topo;
  const struct {
    CommKind kind;
    const char* name;
    int comm_rank, nranks, key;
  } defs[] = {{CommKind::kWorld, "world", rank, t.World(), -1},
              {CommKind::kTp, "tp", rank % t.tp, t.tp, rank % t.tp},
              {CommKind::kPp, "pp", t.Stage(rank), t.pp, t.Stage(rank)},
              {CommKind::kDp, "dp", rank / (t.tp * t.pp), t.dp, rank / (t.tp * t.pp)}};
  uint32_t split = 0;
  for (const auto& d : defs) {
    trace::CommInfo c;
    c.id = CommId(job, rank, d.kind);
    c.origin = d.kind == CommKind::kWorld ? trace::kCommFromUniqueId : trace::kCommFromSplit;
    c.parent_id = d.kind == CommKind::kWorld ? 0 : job.world_id;
    c.rank = d.comm_rank;
    c.nranks = d.nranks;
    c.key = d.key;
    c.split_index = split++;
    c.cuda_device = rank % 8;
    c.created_monotonic_ns = job.t0 - 1000 * kMs + static_cast<int64_t>(c.split_index) * 10 * kMs;
    c.handle = 0x5000 + c.split_index;
    c.name = d.name;
    w->AddComm(c);
  }
}

// The communicator creation calls that precede step 0.
void WriteInits(const Job& job, int rank, trace::RingWriter* w) {
  const Topology& t = job.args.topo;
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(OpType::kCommInitRank);
  d.comm_id = job.world_id;
  d.aux = static_cast<uint64_t>(rank) << 32 | static_cast<uint32_t>(t.World());
  d.dtype = d.redop = d.peer = -1;
  d.t_enter_ns = job.t0 - 1000 * kMs;
  d.t_exit_ns = d.t_enter_ns + 400 * kMs;
  d.tid = 1000 + rank;
  w->Append(d, false);
  const int colors[] = {rank / t.tp, rank / (t.tp * t.pp) * t.tp + rank % t.tp,
                        rank % (t.tp * t.pp)};
  for (uint32_t i = 0; i < 3; ++i) {
    d.op = static_cast<uint32_t>(OpType::kCommSplit);
    d.seq = i + 1;
    d.aux =
        static_cast<uint64_t>(static_cast<uint32_t>(colors[i])) << 32 | static_cast<uint32_t>(rank);
    d.t_enter_ns = job.t0 - (500 - 100 * i) * kMs;
    d.t_exit_ns = d.t_enter_ns + 50 * kMs;
    w->Append(d, false);
  }
}

struct Counters {
  uint64_t coll[4] = {};
  uint64_t p2p[2][64] = {};  // [send?][peer stage]
};

void WriteOp(const Job& job, int rank, int64_t step, uint32_t slot_index, bool completed, bool odd,
             Counters* c, trace::RingWriter* w) {
  const Topology& t = job.args.topo;
  const Slot s = StepProgram(t, t.Stage(rank), step)[slot_index];
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(s.op);
  d.comm_id = CommId(job, rank, s.comm);
  const bool p2p = s.op == OpType::kSend || s.op == OpType::kRecv;
  d.seq = p2p ? ++c->p2p[s.op == OpType::kSend][s.peer_stage] : ++c->coll[static_cast<int>(s.comm)];
  d.count = odd ? s.count * 2 : s.count;
  d.dtype = s.dtype;
  d.redop = s.redop;
  d.peer = p2p ? s.peer_stage : -1;
  d.stream = 0x7f0000000000ULL + static_cast<uint64_t>(rank) * 0x100;
  // Hosts drift by up to 50 us; completion of one collective is the same moment everywhere.
  const int64_t at = job.StepNs(step) + slot_index * kSlotNs;
  d.t_enter_ns = at - (rank * 7919) % 50000;
  d.t_exit_ns = d.t_enter_ns + 6000;
  d.flags = trace::kFlagCompletionTracked;
  d.tid = 1000 + rank;
  const uint64_t index = w->Append(d, true);
  if (completed) w->CompleteDevice(index, at + 1500000);
}

bool WriteRank(const Job& job, int rank) {
  const Topology& t = job.args.topo;
  trace::RingOptions o;
  o.dir = job.args.dir;
  o.record_capacity = 16384;
  o.global_rank = rank;
  o.local_rank = rank % 8;
  o.world_size = t.World();
  o.job_id = "synth-scale";
  std::string error;
  std::unique_ptr<trace::RingWriter> w;
  for (int attempt = 0; attempt < 3 && w == nullptr; ++attempt) {  // name nonces may collide
    w = trace::RingWriter::Create(o, &error);
  }
  if (w == nullptr) {
    std::fprintf(stderr, "synth_job: rank %d: %s\n", rank, error.c_str());
    return false;
  }
  AddComms(job, rank, w.get());
  WriteInits(job, rank, w.get());
  Counters c;
  for (int64_t step = 0; step < job.stall_step; ++step) {
    const uint32_t n = static_cast<uint32_t>(StepProgram(t, t.Stage(rank), step).size());
    for (uint32_t i = 0; i < n; ++i) WriteOp(job, rank, step, i, true, false, &c, w.get());
  }
  for (const IssuedOp& op : job.outcome.ops[rank]) {
    WriteOp(job, rank, op.step, op.slot, op.completed, op.odd, &c, w.get());
  }
  // Heartbeats every 100 ms until the launcher killed every process at once.
  w->Heartbeat(job.t_kill - (rank * 31 % 100) * kMs);
  return true;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    auto value = [&] { return std::atoll(argv[++i]); };
    if (arg == "--tp" && has_value)
      a->topo.tp = static_cast<int>(value());
    else if (arg == "--pp" && has_value)
      a->topo.pp = static_cast<int>(value());
    else if (arg == "--dp" && has_value)
      a->topo.dp = static_cast<int>(value());
    else if (arg == "--records" && has_value)
      a->records = value();
    else if (arg == "--culprit" && has_value)
      a->culprit = static_cast<int>(value());
    else if (arg == "--threads" && has_value)
      a->threads = static_cast<int>(value());
    else if (arg == "--fault" && has_value) {
      const std::string f = argv[++i];
      if (f != "missing" && f != "desync") return false;
      a->fault = f == "missing" ? Fault::kMissing : Fault::kDesync;
    } else if (arg[0] != '-' && a->dir.empty())
      a->dir = arg;
    else
      return false;
  }
  const Topology& t = a->topo;
  if (a->culprit < 0) a->culprit = t.World() / 2 + 3 - t.Stage(t.World() / 2 + 3) * t.tp;
  return !a->dir.empty() && t.tp > 0 && t.pp > 0 && t.pp <= 64 && t.dp > 0 &&
         a->culprit < t.World() && a->records > 100 && a->records <= 16000 && a->threads > 0;
}

}  // namespace

int Main(int argc, char** argv) {
  Job job;
  if (!ParseArgs(argc, argv, &job.args)) {
    std::fprintf(stderr,
                 "usage: synth_job DIR [--tp N] [--pp N] [--dp N] [--records N (<=16000)] "
                 "[--culprit RANK] [--fault missing|desync] [--threads N]\n");
    return 2;
  }
  const Args& a = job.args;
  const Topology& t = a.topo;
  double per_step = 0;
  for (int stage = 0; stage < t.pp; ++stage) {
    per_step += static_cast<double>(StepProgram(t, stage, 0).size()) / t.pp;
  }
  per_step += 0.1;  // the world allreduce every tenth step
  // Leave room for the steps the simulation adds after the culprit's.
  job.stall_step = static_cast<int64_t>((a.records - 4) / per_step) - 2;
  job.outcome = SimulateStall(t, job.stall_step, a.culprit, a.fault);
  int64_t last_step = job.stall_step;
  for (const auto& ops : job.outcome.ops) {
    for (const IssuedOp& op : ops) last_step = std::max(last_step, op.step);
  }
  // Records are stamped after every file's creation time (monotonic "now" plus the time writing
  // takes), as the real writer's are.
  job.t0 = trace::MonotonicNs() + 120000 * kMs;
  job.t_kill = job.StepNs(last_step + 1) + kKilledAfterNs;
  const char world_unique_id[] = "synth_job world unique id";
  job.world_id = trace::CommIdFromUniqueId(world_unique_id, sizeof world_unique_id);

  std::atomic<int> next{0};
  std::atomic<bool> ok{true};
  auto work = [&] {
    for (int r = next++; r < t.World(); r = next++) {
      if (!WriteRank(job, r)) ok = false;
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < a.threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  if (!ok) return 1;

  uint64_t total = 0;
  for (int r = 0; r < t.World(); ++r) {
    const int stage = t.Stage(r);
    total += 4 + job.outcome.ops[r].size() + job.stall_step * StepProgram(t, stage, 0).size() +
             CollectivesBefore(t, stage, CommKind::kWorld, job.stall_step);
  }
  std::printf("culprit: %s rank %d on tp #%llu\n",
              a.fault == Fault::kMissing ? "missing" : "desync", a.culprit,
              static_cast<unsigned long long>(job.outcome.culprit_seq));
  std::printf("records: %llu\n", static_cast<unsigned long long>(total));
  return 0;
}

}  // namespace ncclscope::bench

int main(int argc, char** argv) {
  return ncclscope::bench::Main(argc, argv);
}
