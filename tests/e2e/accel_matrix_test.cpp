// ncclscope's own collectives enabled by the scenario file's "accel" key (docs/scenarios.md), end
// to end on the emulator, as a user sees them:
//   - every rank count 2..8, AllReduce in each size class of the tuning table for fp32, fp16 and
//     bf16 (the smallest and largest one-shot, the smallest and largest two-shot, and one pack
//     past the table's two-shot limit, which NCCL runs; fp32 past the limit at every rank count,
//     the largest and past the limit of each type at some, for time) and AlltoAll (one pack per
//     peer, larger blocks, and past the table's limit), on an emulated A100: the job exits 0 (every
//     rank checked every result against the emulated NCCL's, outputs poisoned with 0xff before each
//     call), `dump --json` says which engine ran each call, as the planner says it must, and the
//     same on every rank;
//   - a rank whose driver cannot open its peers' IPC handles (the ipc_open_fails fault), or whose
//     GPU is too full for its staging buffer (device_memory_limit): every rank of each
//     communicator holding it agrees to stay on NCCL, warns once, and the job is right;
//   - the exporter's ncclscope_accelerated_operations_total counts exactly the routed calls.
// The flag/epoch counters wrap only after 2^32 calls of one communicator: that is tested by the
// twins' unit tests (tests/collectives/allreduce_twin_test.cpp and alltoall_twin_test.cpp start
// the counter at 0xFFFFFFFE), not here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives/planner/alltoall_plan.h"
#include "collectives/planner/planner.h"
#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/trace_consistency.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"

namespace ncclscope::testing {
namespace {

namespace nc = collectives;

// The matrix runs on an emulated A100 (compute capability 8.0) at every rank count: its table rows
// end two-shot (and all-to-all) at 8 MiB, a size the CPU emulator handles in seconds; Hopper's end
// at 32-64 MiB. An emulated B200 (10.0), whose AllReduce rows end at 1-2 MiB, runs at a few.
struct Gpu {
  nc::GpuClass gpu;
  const char* compute_capability;  // NCCLSIM_COMPUTE_CAPABILITY
};
constexpr Gpu kAmpere{nc::GpuClass::kAmpere, "8.0"};
constexpr Gpu kBlackwell{nc::GpuClass::kBlackwell, "10.0"};
// Staging buffer: above the tables' 8 MiB, so what sends the last size class to NCCL is the
// table's limit, not the buffer.
constexpr size_t kBufferBytes = 9u << 20;
constexpr size_t kPack = 16;
// Once: each routed call already finds the flags and staging of the communicator's call before.
constexpr int kRepeat = 1;

struct Dtype {
  const char* name;  // in the scenario and in `dump --json`
  int32_t nccl;      // ncclDataType_t
  size_t bytes;
};
constexpr Dtype kFp32{"float32", 7, 4};
constexpr Dtype kFp16{"float16", 6, 2};
constexpr Dtype kBf16{"bfloat16", 9, 2};

// One call of the job on world, with the engine the planner says must run it.
struct Call {
  std::string op;  // allreduce, alltoall
  Dtype dtype;
  size_t count;
  std::string engine;  // ncclscope or nccl
};

nc::AllReducePlan PlanOf(const Gpu& gpu, const Dtype& d, size_t count, int nranks) {
  nc::AllReduceCall c;
  c.nccl_dtype = d.nccl;
  c.nccl_redop = 0;  // ncclSum
  c.count = count;
  c.nranks = nranks;
  c.single_node = c.peers_reachable = true;
  c.gpu = gpu.gpu;
  c.buffer_bytes = kBufferBytes;
  return nc::PlanAllReduce(c);
}

nc::AlltoAllPlan AlltoAllPlanOf(const Gpu& gpu, const Dtype& d, size_t count, int nranks) {
  nc::AlltoAllCall c;
  c.nccl_dtype = d.nccl;
  c.count = count;
  c.nranks = nranks;
  c.single_node = c.peers_reachable = true;
  c.gpu = gpu.gpu;
  c.buffer_bytes = kBufferBytes;
  return nc::PlanAlltoAll(c);
}

// AllReduce at each edge of the table row for n ranks, each checked against the class it is meant
// to test, so a table change that moves an edge fails here instead of testing something else.
// The edges at the two-shot limit (8 MiB) take the CPU emulator seconds per call (pattern,
// reduction and check of every element on every rank), so they come only when asked: `largest`,
// the largest call of ncclscope's (two-shot; at 2 ranks one-shot), and `past`, the first one past
// the table's limit, which NCCL runs.
void AddAllReduces(const Gpu& gpu, int n, const Dtype& d, bool largest, bool past,
                   std::vector<Call>* calls) {
  const nc::TuningRow* row = nc::FindTuning(gpu.gpu, n);
  ASSERT_NE(row, nullptr);
  ASSERT_LT(row->two_shot_max_bytes, kBufferBytes);
  struct Edge {
    size_t bytes;
    nc::Algorithm want;
  };
  std::vector<Edge> edges = {{kPack, nc::Algorithm::kOneShot}};
  if (row->one_shot_max_bytes < row->two_shot_max_bytes) {
    edges.push_back({row->one_shot_max_bytes - kPack, nc::Algorithm::kOneShot});
    edges.push_back({row->one_shot_max_bytes, nc::Algorithm::kTwoShot});
    if (largest) edges.push_back({row->two_shot_max_bytes - kPack, nc::Algorithm::kTwoShot});
  } else if (largest) {  // 2 ranks: one-shot up to the limit
    edges.push_back({row->one_shot_max_bytes - kPack, nc::Algorithm::kOneShot});
  }
  if (past) edges.push_back({row->two_shot_max_bytes, nc::Algorithm::kNccl});
  for (const Edge& e : edges) {
    const size_t count = e.bytes / d.bytes;
    const nc::AllReducePlan plan = PlanOf(gpu, d, count, n);
    EXPECT_EQ(plan.algorithm, e.want) << d.name << " " << e.bytes << " bytes at " << n << " ranks";
    if (e.want == nc::Algorithm::kNccl) {
      EXPECT_EQ(plan.fallback, nc::Fallback::kTooLarge) << "not the table's limit";
    }
    calls->push_back(
        {"allreduce", d, count, e.want == nc::Algorithm::kNccl ? "nccl" : "ncclscope"});
  }
}

void AddAlltoAlls(const Gpu& gpu, int n, std::vector<Call>* calls) {
  const nc::AlltoAllTuningRow* row = nc::FindAlltoAllTuning(gpu.gpu, n);
  ASSERT_NE(row, nullptr);
  ASSERT_LT(row->max_bytes, kBufferBytes);
  // The first count whose whole sendbuff (count x 4 bytes x n) reaches the limit, in whole packs.
  const size_t past = (row->max_bytes / (4 * static_cast<size_t>(n)) + 3) / 4 * 4;
  const std::vector<std::pair<Dtype, size_t>> sizes = {{kBf16, 8}, {kFp32, 1024}, {kFp32, past}};
  for (const auto& [d, count] : sizes) {
    const nc::AlltoAllPlan plan = AlltoAllPlanOf(gpu, d, count, n);
    const bool ours = plan.algorithm != nc::Algorithm::kNccl;
    EXPECT_EQ(ours, count != past) << d.name << " " << count << " per peer at " << n << " ranks";
    if (!ours) {
      EXPECT_EQ(plan.fallback, nc::Fallback::kAlltoAllTooLarge);
    }
    calls->push_back({"alltoall", d, count, ours ? "ncclscope" : "nccl"});
  }
}

// One step per data type (its buffers are freed before the next step's), then the AlltoAlls.
std::string MatrixScenario(const std::vector<std::vector<Call>>& steps) {
  std::string s = R"({"name": "accel-matrix", "seed": 23, "repeat": )" + std::to_string(kRepeat) +
                  R"(, "accel": {"enabled": true, "buffer": ")" +
                  std::to_string(kBufferBytes >> 20) + R"(m"}, "steps": [)";
  for (size_t k = 0; k < steps.size(); ++k) {
    s += std::string(k ? "," : "") + R"({"ops": [)";
    for (size_t i = 0; i < steps[k].size(); ++i) {
      const Call& c = steps[k][i];
      s += std::string(i ? "," : "") + R"({"op": ")" + c.op + R"(", "count": )" +
           std::to_string(c.count) + R"(, "dtype": ")" + c.dtype.name + R"("})";
    }
    s += "]}";
  }
  return s + "]}";
}

// The scenario key, not the environment, must be what enables acceleration here.
void ClearAccelEnvironment() {
  for (const char* v :
       {"NCCLSCOPE_ACCEL", "NCCLSCOPE_ACCEL_BUFFER", "NCCLSCOPE_ACCEL_TIMEOUT_MS"}) {
    unsetenv(v);
  }
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct MatrixCase {
  Gpu gpu;
  int n;
};

class AccelMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(AccelMatrix, EveryCallRunsWhereThePlannerSaysAndEveryResultIsRight) {
  const Gpu gpu = GetParam().gpu;
  const int n = GetParam().n;
  // fp32 past the limit at every rank count; both largest edges for each type at some.
  std::vector<std::vector<Call>> steps(4);
  AddAllReduces(gpu, n, kFp32, n == 2 || n == 8, true, &steps[0]);
  AddAllReduces(gpu, n, kFp16, n == 5, n == 5, &steps[1]);
  AddAllReduces(gpu, n, kBf16, n == 3, n == 3, &steps[2]);
  AddAlltoAlls(gpu, n, &steps[3]);
  if (HasFatalFailure()) return;
  std::vector<Call> calls;  // one repetition, in order: what collective #seq is
  for (const auto& step : steps) calls.insert(calls.end(), step.begin(), step.end());

  ClearAccelEnvironment();
  ScratchDir scratch;
  const std::string scenario = scratch / "matrix.json";
  std::ofstream(scenario) << MatrixScenario(steps);
  const std::string dir = scratch / "trace";
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--ranks", std::to_string(n), "--scenario", scenario, "--dir", dir,
                  "--timeout", "60"},
                 {{"NCCLSIM_COMPUTE_CAPABILITY", gpu.compute_capability}}, 120);
  // Exit 0: every rank checked every result of every call against the pattern.
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_NE(sim.out.find("ncclscope sim: accel from the scenario: NCCLSCOPE_ACCEL=1, "
                         "NCCLSCOPE_ACCEL_BUFFER=" +
                         std::to_string(kBufferBytes) + "\n"),
            std::string::npos)
      << sim.out;
  EXPECT_NE(sim.out.find("all " + std::to_string(n) + " ranks finished with correct results"),
            std::string::npos)
      << sim.out;
  EXPECT_EQ(sim.err.find("warning"), std::string::npos) << sim.err;

  const auto dump = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dump.size()), n);
  std::map<uint64_t, std::string> engine_of_seq;  // rank 0's, which every rank must match
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    size_t seen = 0;
    for (const auto& rec : d.records) {
      const std::string op = rec.at("op");
      ASSERT_NE(op, "accel_stall") << rec.dump();
      if (op != "allreduce" && op != "alltoall") continue;
      const auto seq = rec.at("seq").get<uint64_t>();
      ASSERT_GE(seq, 1u);
      const Call& want = calls[(seq - 1) % calls.size()];
      EXPECT_EQ(op, want.op) << rec.dump();
      EXPECT_EQ(rec.at("dtype"), want.dtype.name) << rec.dump();
      EXPECT_EQ(rec.at("engine"), want.engine)
          << want.op << " " << want.dtype.name << " count " << want.count << ": " << rec.dump();
      EXPECT_EQ(rec.at("device"), "done") << rec.dump();
      const auto [it, first] = engine_of_seq.emplace(seq, rec.at("engine"));
      if (!first) {
        EXPECT_EQ(rec.at("engine"), it->second) << "seq " << seq << " differs by rank";
      }
      ++seen;
    }
    EXPECT_EQ(seen, calls.size() * kRepeat);
  }
  ExpectCollectivesAgree(dump);
}

std::string MatrixCaseName(const ::testing::TestParamInfo<MatrixCase>& p) {
  return std::to_string(p.param.n) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Ranks, AccelMatrix,
                         ::testing::Values(MatrixCase{kAmpere, 2}, MatrixCase{kAmpere, 3},
                                           MatrixCase{kAmpere, 4}, MatrixCase{kAmpere, 5},
                                           MatrixCase{kAmpere, 6}, MatrixCase{kAmpere, 7},
                                           MatrixCase{kAmpere, 8}),
                         MatrixCaseName);
// Blackwell's smaller rows, with every largest edge: 2 ranks (one-shot to 2 MiB), 3 (bf16), 5
// (fp16), 8 (fp32).
INSTANTIATE_TEST_SUITE_P(Blackwell, AccelMatrix,
                         ::testing::Values(MatrixCase{kBlackwell, 2}, MatrixCase{kBlackwell, 3},
                                           MatrixCase{kBlackwell, 5}, MatrixCase{kBlackwell, 8}),
                         MatrixCaseName);

// A set-up failure on one rank of a 4-rank accel.json job (tp pairs {0,1} and {2,3}): every rank
// of world and of the failed rank's tp pair must agree to stay on NCCL, so that no rank is left
// waiting for a peer that never comes (in a kernel, or in the set-up's exchanges), and say so once
// per communicator: `reason(comm_rank_of_failed, on_the_failed_rank)` is the line's end. The other
// pair stays on ncclscope's kernels; every result is right.
void ExpectSetUpFailureAgreed(const std::string& scenario, const std::string& injected, int failed,
                              const std::function<std::string(int, bool)>& reason) {
  constexpr int kRanks = 4;
  ClearAccelEnvironment();
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunSim(scenario, kRanks, dir, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_NE(sim.out.find("all 4 ranks finished with correct results"), std::string::npos)
      << sim.out;
  EXPECT_NE(sim.err.find("[rank " + std::to_string(failed) + "] ncclscope-sim-rank: injecting " +
                         injected),
            std::string::npos)
      << sim.err;
  const int pair = failed / 2;
  const auto line = [&](int rank, const std::string& comm) {
    const int in_comm = comm == "world" ? failed : failed % 2;
    return "[rank " + std::to_string(rank) +
           "] ncclscope: warning: NCCLSCOPE_ACCEL: communicator " + comm +
           " stays on NCCL: " + reason(in_comm, rank == failed) + "\n";
  };
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(Count(sim.err, line(r, "world")), 1u) << line(r, "world") << sim.err;
    if (r / 2 == pair) {
      EXPECT_EQ(Count(sim.err, line(r, "tp")), 1u) << line(r, "tp") << sim.err;
    }
  }
  EXPECT_EQ(Count(sim.err, "warning"), 6u) << sim.err;  // nothing else

  const auto dump = DumpJson(dir);
  ASSERT_EQ(dump.size(), 4u);
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    std::map<std::string, int> calls, routed;
    for (const auto& rec : d.records) {
      const std::string op = rec.at("op");
      if (op != "allreduce" && op != "alltoall") continue;
      const std::string key = std::string(rec.at("comm_name")) + " " + op;
      ++calls[key];
      routed[key] += rec.at("engine") == "ncclscope";
    }
    // Per repetition (3): world 2 AllReduces and 1 AlltoAll, tp 1 AllReduce.
    EXPECT_EQ(calls["world allreduce"], 6);
    EXPECT_EQ(calls["world alltoall"], 3);
    EXPECT_EQ(calls["tp allreduce"], 3);
    EXPECT_EQ(routed["world allreduce"], 0);
    EXPECT_EQ(routed["world alltoall"], 0);
    EXPECT_EQ(routed["tp allreduce"], rank / 2 == pair ? 0 : 3);
  }
  ExpectCollectivesAgree(dump);
}

// sim/scenarios/accel-ipc-fails.json: rank 3's driver fails every cuIpcOpenMemHandle. Its
// set-up fails after the first exchange; the second (plugin/accel/accel_comm.cpp SetUpAccelComm)
// tells every rank.
TEST(AccelSetUpFailure, ARankThatCannotMapItsPeersKeepsItsCommunicatorsOnNccl) {
  ExpectSetUpFailureAgreed("accel-ipc-fails.json", "ipc_open_fails", 3, [](int in_comm, bool) {
    return "rank " + std::to_string(in_comm) + " could not map its peers' memory";
  });
}

// sim/scenarios/accel-device-memory.json: rank 1's GPU holds 1 MiB, so its staging buffer (1 MiB)
// cannot be allocated. Before the set-up reserved its exchange buffer first, that rank's full GPU
// also refused the exchange's few bytes, it left the exchange out, and the others waited in
// NCCL's allgather for ever: the job hung.
TEST(AccelSetUpFailure, ARankWhoseGpuIsFullKeepsItsCommunicatorsOnNccl) {
  ExpectSetUpFailureAgreed(
      "accel-device-memory.json", "device_memory_limit", 1, [](int in_comm, bool here) {
        return "rank " + std::to_string(in_comm) + " could not prepare" +
               (here ? " (here: device memory for the buffers could not be allocated)" : "");
      });
}

// The value of `series` (name and labels as the exporter writes them) in a scrape; -1 if absent.
double SeriesValue(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + series.size() + 2);
}

// sim/scenarios/accel.json at 4 ranks, then the node's exporter over its trace directory: the
// accelerated-operations counter of every rank, communicator and op equals the calls `dump`
// shows on ncclscope's kernels, and those are the calls the scenario makes eligible.
TEST(AccelMetrics, TheExporterCountsExactlyTheRoutedCalls) {
  constexpr int kRanks = 4;
  ClearAccelEnvironment();
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunSim("accel.json", kRanks, dir, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("warning"), std::string::npos) << sim.err;

  std::map<std::string, int> routed;  // "rank comm op"
  for (const auto& [rank, d] : DumpJson(dir)) {
    for (const auto& rec : d.records) {
      const std::string op = rec.at("op");
      if (op != "allreduce" && op != "alltoall" && op != "allgather") continue;
      const std::string key =
          std::to_string(rank) + " " + std::string(rec.at("comm_name")) + " " + op;
      routed[key] += rec.at("engine") == "ncclscope";
    }
  }
  // accel.json per repetition (3): tp's bf16 AllReduce, world's AlltoAll and 256 KiB AllReduce
  // (one-shot at 4 ranks) are ours; world's 1.2 MB AllReduce (past the 1 MiB buffer) and its
  // AllGather are NCCL's.
  for (int r = 0; r < kRanks; ++r) {
    const std::string p = std::to_string(r) + " ";
    EXPECT_EQ(routed[p + "tp allreduce"], 3);
    EXPECT_EQ(routed[p + "world alltoall"], 3);
    EXPECT_EQ(routed[p + "world allreduce"], 3);
    EXPECT_EQ(routed[p + "world allgather"], 0);
  }

  BackgroundProcess exporter({Cli(), "exporter", "--dir", dir, "--listen", "127.0.0.1:0"},
                             scratch / "exporter.log");
  const int port = exporter.WaitForPort(20);
  ASSERT_GT(port, 0) << exporter.Output();
  const HttpResponse r = HttpGet(port, "/metrics");
  ASSERT_EQ(r.status, 200);
  for (const auto& [key, count] : routed) {
    const size_t a = key.find(' '), b = key.rfind(' ');
    const std::string series = "ncclscope_accelerated_operations_total{rank=\"" + key.substr(0, a) +
                               "\",comm=\"" + key.substr(a + 1, b - a - 1) + "\",op=\"" +
                               key.substr(b + 1) + "\"}";
    EXPECT_EQ(SeriesValue(r.body, series), count) << series << "\n" << r.body;
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    for (const char* comm : {"world", "tp"}) {
      const std::string series = "ncclscope_accel_stalls_total{rank=\"" + std::to_string(rank) +
                                 "\",comm=\"" + comm + "\"}";
      EXPECT_EQ(SeriesValue(r.body, series), 0) << series << "\n" << r.body;
    }
  }
}

}  // namespace
}  // namespace ncclscope::testing
