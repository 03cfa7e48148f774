// Writes the Flight Recorder dumps of a synthetic 3D-parallel job for the FR import benchmark
// (run_fr_import_bench.sh): one pickle per rank named as torch names them, each with the last
// `entries` entries of a long run (record ids well past the buffer, as in any job that ran a
// while), tensor-parallel all_reduce, data-parallel reduce_scatter/all_gather and a default-group
// all_reduce per step, and a hang at the end: every rank waits in a data-parallel all_gather that
// one rank never called. Optionally `frames` Python stack frames per entry (the same stack for
// every entry), shared across entries through the pickle memo as torch's dumper shares them.
// Usage: fr_synth_dumps OUTDIR [--ranks N] [--entries E] [--frames K] [--tp T] [--threads J]
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/trace/flight_recorder/memo_layout_pickle.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_writer.h"

namespace fr = ncclscope::flight_recorder;

namespace {

struct Plan {
  std::string dir;
  int ranks = 4096;
  int entries = 2000;
  int frames = 0;
  int tp = 8;
  int threads = 2;
  int hung_rank = 123;
};

constexpr int64_t kT0 = 1'760'000'000'000'000'000;
constexpr int64_t kStepNs = 50'000'000;  // 50 ms per step
// Long after any step a job of a few thousand steps reaches (10,400 steps: 520 s), plus torch's
// 10-minute timeout.
constexpr int64_t kDumpedAt = kT0 + 11'000 * kStepNs + 600'000'000'000;

fr::FrDump DumpOf(const Plan& p, int rank) {
  fr::FrDump d;
  d.version = "2.10";
  d.comm_lib_version = "2.27.3";
  const int tp_index = rank / p.tp;
  const int dp_index = rank % p.tp;
  std::vector<int> all(p.ranks), tp, dp;
  for (int r = 0; r < p.ranks; ++r) all[r] = r;
  for (int r = tp_index * p.tp; r < (tp_index + 1) * p.tp; ++r) tp.push_back(r);
  for (int r = dp_index; r < p.ranks; r += p.tp) dp.push_back(r);
  // Group names as torch numbers them: the same creation order on every rank.
  const std::string tp_name = std::to_string(1 + tp_index);
  const std::string dp_name = std::to_string(1 + p.ranks / p.tp + dp_index);
  const std::string world_name = "0";
  d.pg_config = {
      {"0", "0", "default_pg", all}, {tp_name, tp_name, "tp", tp}, {dp_name, dp_name, "dp", dp}};
  // Each step: 2 tp all_reduce, dp reduce_scatter + all_gather, 1 default all_reduce = 5 entries.
  const int steps = p.entries / 5;
  const int64_t first_step = 10'000;  // the buffer dropped everything before
  int64_t record_id = first_step * 5;
  std::vector<fr::FrFrame> frames;
  for (int f = 0; f < p.frames; ++f) {
    frames.push_back({"forward_" + std::to_string(f), "/workspace/model/layers.py", 100 + f});
  }
  const bool hung_dp = std::find(dp.begin(), dp.end(), p.hung_rank) != dp.end();
  for (int s = 0; s < steps; ++s) {
    const int64_t step = first_step + s;
    const bool last = s == steps - 1;
    struct Op {
      const char* name;
      const std::string* pg;
      const char* desc;
      int64_t seq;
      int64_t numel;
    };
    const Op ops[5] = {{"nccl:all_reduce", &tp_name, "tp", 2 * step, 4 << 20},
                       {"nccl:all_reduce", &tp_name, "tp", 2 * step + 1, 4 << 20},
                       {"nccl:_reduce_scatter_base", &dp_name, "dp", 2 * step, 1 << 20},
                       {"nccl:_all_gather_base", &dp_name, "dp", 2 * step + 1, 1 << 20},
                       {"nccl:all_reduce", &world_name, "default_pg", step, 1}};
    for (int k = 0; k < 5; ++k) {
      const Op& op = ops[k];
      // The hang: in the last step the dp all_gather is never called by hung_rank, and everyone
      // in its dp group waits in it (nothing after it is issued).
      if (last && k == 3 && rank == p.hung_rank) break;
      if (last && k == 4) break;
      fr::FrEntry e;
      e.record_id = record_id++;
      e.pg_id = op.pg == &tp_name ? 1 : (op.pg == &dp_name ? 2 : 0);  // creation order
      e.pg_name = *op.pg;
      e.pg_desc = op.desc;
      e.collective_seq_id = op.seq;
      e.op_id = op.seq;
      e.profiling_name = op.name;
      e.time_created_ns = kT0 + step * kStepNs + int64_t{k} * 5'000'000 + int64_t{rank} * 1000;
      e.input_sizes = {{op.numel}};
      e.output_sizes = {{op.numel}};
      e.input_dtypes = {"BFloat16"};
      e.output_dtypes = {"BFloat16"};
      const bool waiting = last && k == 3 && hung_dp;
      e.state = waiting ? fr::FrState::kScheduled : fr::FrState::kCompleted;
      if (!waiting) {
        e.time_discovered_completed_ns = e.time_created_ns + 3'000'000;
        e.retired = true;
      }
      e.timeout_ms = 600000;
      e.thread_id = "140234567";
      e.thread_name = "pt_main_thread";
      if (!frames.empty()) e.frames = frames;
      d.entries.push_back(std::move(e));
    }
  }
  d.pg_status = {{"0", first_step + steps - 2, -1, first_step + steps - 2}};
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  Plan p;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUTDIR [--ranks N] [--entries E] [--frames K] [--tp T]\n",
                 argv[0]);
    return 2;
  }
  p.dir = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--ranks")
      p.ranks = v;
    else if (flag == "--entries")
      p.entries = v;
    else if (flag == "--frames")
      p.frames = v;
    else if (flag == "--tp")
      p.tp = v;
    else if (flag == "--threads")
      p.threads = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (p.ranks <= 0 || p.tp <= 0 || p.ranks % p.tp != 0 || p.entries < 10) {
    std::fprintf(stderr, "ranks must be a positive multiple of tp, entries >= 10\n");
    return 2;
  }
  p.hung_rank = std::min(p.hung_rank, p.ranks - 1);
  mkdir(p.dir.c_str(), 0700);
  std::atomic<int> next{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (int r = next++; r < p.ranks; r = next++) {
      // With frames, torch's layout: a frame dict seen before is a BINGET of the first one
      // (FR's dumper keeps one table of frames), which WritePickle does not do.
      const fr::PickleValue tree = fr::EncodeFrDump(DumpOf(p, r));
      const std::string pickle = p.frames > 0 ? fr::testing::WriteMemoLayoutPickle(
                                                    tree, fr::testing::MemoLayout::kTorch, false)
                                              : fr::WritePickle(tree);
      const std::string path = p.dir + "/nccl_trace_rank_" + std::to_string(r);
      {
        std::ofstream out(path, std::ios::binary);
        out << pickle;
        if (!out) failed = true;
      }
      // Dumped when the 10-minute timeout fired, as torch does: the file's time says when.
      const int64_t t = kDumpedAt;
      const timespec times[2] = {{t / 1'000'000'000, t % 1'000'000'000},
                                 {t / 1'000'000'000, t % 1'000'000'000}};
      if (utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) failed = true;
      bytes += pickle.size();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < p.threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failed) {
    std::fprintf(stderr, "cannot write into %s\n", p.dir.c_str());
    return 1;
  }
  std::printf("dumps: %d\nentries: %d\nframes: %d\nbytes: %llu\nhung_rank: %d\n", p.ranks,
              p.entries / 5 * 5, p.frames, static_cast<unsigned long long>(bytes.load()),
              p.hung_rank);
  return 0;
}
