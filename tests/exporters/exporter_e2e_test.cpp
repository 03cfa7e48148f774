// `ncclscope exporter` as an SRE runs it: started next to an emulated job, scraped over HTTP. What
// a user notices: the counters equal what the job did, the text passes promtool, a hang becomes a
// verdict series within seconds, a taken port is a clear error, only GET does anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/sim_plan.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/hang_detector/nvtx_records.h"

namespace ncclscope::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool IsOperation(const std::string& op) {
  static const std::set<std::string> kOps = {"allreduce",     "broadcast", "reduce", "allgather",
                                             "reducescatter", "alltoall",  "gather", "scatter",
                                             "send",          "recv"};
  return kOps.count(op) != 0;
}

// An exporter on an ephemeral loopback port for `dir`.
class Exporter {
 public:
  Exporter(const ScratchDir& scratch, const std::string& dir,
           const std::vector<std::string>& extra = {})
      : process_(Args(dir, extra), scratch / "exporter.log") {
    port_ = process_.WaitForPort(20);
    EXPECT_GT(port_, 0) << process_.Output();
  }
  int port() const { return port_; }
  std::string Metrics() {
    const HttpResponse r = HttpGet(port_, "/metrics");
    EXPECT_EQ(r.status, 200);
    return r.body;
  }
  BackgroundProcess& process() { return process_; }

 private:
  static std::vector<std::string> Args(const std::string& dir,
                                       const std::vector<std::string>& extra) {
    std::vector<std::string> args = {Cli(), "exporter", "--dir", dir, "--listen", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  BackgroundProcess process_;
  int port_ = -1;
};

TEST(ExporterE2E, CountersEqualWhatTheJobDid) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  Exporter exporter(scratch, dir);  // before the job: the directory does not exist yet
  EXPECT_EQ(Value(exporter.Metrics(), "ncclscope_exporter_ring_files"), 0);

  constexpr int kRanks = 4;
  const ProcessResult sim = RunSim("healthy.json", kRanks, dir, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  const std::string text = exporter.Metrics();
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), kRanks);
  EXPECT_EQ(Value(text, "ncclscope_exporter_read_errors_total"), 0);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    std::map<std::pair<std::string, std::string>, int> planned;  // (comm, op) -> calls
    int total = 0;
    for (const auto& call : LoadPlan(ScenarioPath("healthy.json"), r, kRanks).calls) {
      const std::string op = call.at("op");
      if (!IsOperation(op)) continue;
      ++planned[{call.at("comm").get<std::string>(), op}];
      ++total;
    }
    ASSERT_GT(total, 0);
    for (const auto& [key, n] : planned) {
      EXPECT_EQ(Value(text, "ncclscope_operations_total{rank=\"" + std::to_string(r) +
                                "\",comm=\"" + key.first + "\",op=\"" + key.second + "\"}"),
                n)
          << key.first << " " << key.second;
    }
    EXPECT_EQ(Sum(text, "ncclscope_operations_total", {{"rank", std::to_string(r)}}), total);
    EXPECT_EQ(Value(text, "ncclscope_rank_up{rank=\"" + std::to_string(r) + "\"}"), 0)
        << "the job has ended";
    EXPECT_EQ(Sum(text, "ncclscope_inflight_operations", {{"rank", std::to_string(r)}}), 0);
  }
  // The emulator's libcuda gives every device a UUID; the probe put it into the ring header, in
  // nvidia-smi's format, one GPU per rank.
  static const std::regex kUuid(
      "UUID=\"(GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\"");
  std::set<std::string> uuids;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kUuid);
       it != std::sregex_iterator(); ++it) {
    uuids.insert((*it)[1]);
  }
  EXPECT_EQ(uuids.size(), static_cast<size_t>(kRanks)) << text;
}

TEST(ExporterE2E, TimeInEachPhaseAndEachRanksStepComeFromTheScenariosNvtxRanges) {
  // The scenario runner opens "step G" around each step and the step's name (forward, backward,
  // optimizer) inside it (sim/scenario/rank_runner.cpp); `ncclscope sim` injects the probe's NVTX
  // side, so every call carries its phase.
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  Exporter exporter(scratch, dir);
  constexpr int kRanks = 4;
  const ProcessResult sim = RunSim("healthy.json", kRanks, dir, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  const std::string text = exporter.Metrics();
  const nlohmann::json scenario =
      nlohmann::json::parse(std::ifstream(ScenarioPath("healthy.json")));
  const nlohmann::json& steps = scenario.at("steps");
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::string rank = std::to_string(r);
    std::map<std::pair<std::string, std::string>, int> planned;  // (comm, phase) -> operations
    int last_step = -1;
    for (const auto& call : LoadPlan(ScenarioPath("healthy.json"), r, kRanks).calls) {
      if (!IsOperation(call.at("op"))) continue;
      const int g = call.at("step").get<int>();
      ASSERT_GE(g, 0) << "an operation outside the training loop: " << call.dump();
      const std::string phase = steps.at(g % steps.size()).at("name");
      ++planned[{call.at("comm").get<std::string>(), phase}];
      last_step = std::max(last_step, g);
    }
    ASSERT_FALSE(planned.empty());
    int total = 0;
    for (const auto& [key, n] : planned) {
      EXPECT_EQ(Value(text, "ncclscope_phase_operations_total{rank=\"" + rank + "\",comm=\"" +
                                key.first + "\",phase=\"" + key.second + "\"}"),
                n)
          << key.first << " " << key.second << "\n"
          << text;
      EXPECT_GT(Value(text, "ncclscope_phase_operation_seconds_total{rank=\"" + rank +
                                "\",comm=\"" + key.first + "\",phase=\"" + key.second + "\"}")
                    .value_or(-1.0),
                0);
      total += n;
    }
    // Every operation is in one of the scenario's phases: none outside, none unknown.
    EXPECT_EQ(Sum(text, "ncclscope_phase_operations_total", {{"rank", rank}}), total);
    EXPECT_EQ(Value(text, "ncclscope_rank_step{rank=\"" + rank + "\"}"), last_step);
  }
}

// CI installs promtool (Debian package `prometheus`, scripts/install-deps.sh): missing, it fails.
std::string Promtool() {
  for (const char* path : {"/usr/bin/promtool", "/usr/local/bin/promtool"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

TEST(ExporterE2E, PromtoolAcceptsARealScrape) {
  const std::string promtool = Promtool();
  ASSERT_FALSE(promtool.empty())
      << "promtool not found: install the Debian package 'prometheus' (scripts/install-deps.sh)";
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  Exporter exporter(scratch, dir);
  ASSERT_EQ(RunSim("healthy.json", 4, dir, 60).exit_code, 0);
  const std::string text = exporter.Metrics();
  ASSERT_NE(text.find("ncclscope_operation_duration_seconds_bucket"), std::string::npos);
  ASSERT_NE(text.find("ncclscope_phase_operation_seconds_total{"), std::string::npos);
  ASSERT_NE(text.find("ncclscope_rank_step{"), std::string::npos);
  std::ofstream(scratch / "scrape.txt") << text;
  const ProcessResult check =
      RunProcess({"sh", "-c", promtool + " check metrics < " + (scratch / "scrape.txt")}, {}, 60);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(ExporterE2E, PromtoolAcceptsEscapedLabelValues) {
  const std::string promtool = Promtool();
  ASSERT_FALSE(promtool.empty()) << "promtool not found: install the Debian package 'prometheus'";
  JobBuilder job(1);
  const uint64_t odd = job.Comm("quote\" backslash\\ newline\n end", {0});
  job.Coll(0, odd, trace::OpType::kAllReduce, 0.0, Done::kCompleted).reserved = NvtxWord(3, 1);
  job.Coll(0, odd, trace::OpType::kAllReduce, 0.1, Done::kCompleted).reserved = NvtxWord(3, 2);
  SnapshotSource source;
  source.set = job.Build();
  // Phase names are the program's: quotes, backslashes, newlines, and a name the probe cut inside
  // a UTF-8 character (Prometheus refuses label values that are not UTF-8).
  AddNameRecords(&source.set, {{1, "fwd \"q\" \\ \n end", ""}, {2, "caf\xC3", ""}});
  exporters::NodeAggregator aggregator(&source, {});
  ScratchDir scratch;
  const std::string text = Scrape(aggregator);
  ASSERT_NE(text.find("ncclscope_phase_operations_total{"), std::string::npos) << text;
  std::ofstream(scratch / "scrape.txt") << text;
  const ProcessResult check =
      RunProcess({"sh", "-c", promtool + " check metrics < " + (scratch / "scrape.txt")}, {}, 60);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(ExporterE2E, AHangBecomesAVerdictSeriesWithinSeconds) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  constexpr double kIntervalS = 1;
  constexpr double kPollS = 0.25;
  // A floor no test outlasts: a suspect stays one, and says when it will be confirmed.
  Exporter exporter(scratch, dir, {"--verdict-interval", "1", "--confirm-floor", "300"});
  const auto start = Clock::now();
  ProcessResult sim;
  // The job hangs until the launcher's timeout; a loaded machine may take long to start it.
  std::thread job([&] { sim = RunSim("hang.json", 4, dir, 25); });
  std::string text;
  bool seen = false;
  while (!seen && std::chrono::duration<double>(Clock::now() - start).count() < 24) {
    text = exporter.Metrics();
    seen = Sum(text, "ncclscope_verdict", {{"class", "device-stall"}}) > 0;
    if (!seen) std::this_thread::sleep_for(std::chrono::duration<double>(kPollS));
  }
  job.join();
  ASSERT_TRUE(seen) << text;
  // Whether the stuck stream already proves the hang is the correlator's call; either way the
  // series says which stage it is in, and a suspect when the exporter's floor confirms it.
  const double suspect =
      Sum(text, "ncclscope_verdict",
          {{"class", "device-stall"}, {"comm", "tp"}, {"rank", "1"}, {"stage", "suspect"}});
  const double hang =
      Sum(text, "ncclscope_verdict",
          {{"class", "device-stall"}, {"comm", "tp"}, {"rank", "1"}, {"stage", "hang"}});
  EXPECT_EQ(suspect + hang, 1) << text;
  const std::string stage = suspect > 0 ? "suspect" : "hang";
  if (suspect > 0) {
    EXPECT_GE(
        *Value(
            text,
            R"(ncclscope_verdict_confirm_after_seconds{class="device-stall",comm="tp",stage="suspect",scope="node"})"),
        300)
        << "--confirm-floor reaches the correlator\n"
        << text;
  }
  // Measured from the onset of the hang, not from the job's start: the verdict's age when the
  // correlator made it, plus at most one analysis period and one poll before we saw it.
  const double age =
      *Value(text, R"(ncclscope_verdict_age_seconds{class="device-stall",comm="tp",stage=")" +
                       stage + "\",scope=\"node\"}");
  EXPECT_GT(age, 0);
  EXPECT_LT(age + kIntervalS + kPollS, 10) << "onset to a visible series, in seconds";
}

TEST(ExporterE2E, ACeilingBelowTheFloorIsAClearErrorWithExitCode3) {
  ScratchDir scratch;
  const ProcessResult r =
      RunProcess({Cli(), "exporter", "--dir", scratch / "trace", "--listen", "127.0.0.1:0",
                  "--confirm-floor", "120", "--confirm-ceiling", "60"},
                 {}, 30);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--confirm-ceiling 60 is below --confirm-floor 120"), std::string::npos)
      << r.err;
}

TEST(ExporterE2E, APortInUseIsAClearErrorWithExitCode3) {
  ScratchDir scratch;
  Exporter first(scratch, scratch / "trace");
  const ProcessResult second = RunProcess({Cli(), "exporter", "--dir", scratch / "trace",
                                           "--listen", "127.0.0.1:" + std::to_string(first.port())},
                                          {}, 30);
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_NE(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
            std::string::npos)
      << second.err;
}

TEST(ExporterE2E, HealthzAnswersOkAndOnlyGetIsServed) {
  ScratchDir scratch;
  Exporter exporter(scratch, scratch / "trace");
  const HttpResponse health = HttpGet(exporter.port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  EXPECT_EQ(HttpRequest(exporter.port(), "POST", "/metrics").status, 405);
  EXPECT_EQ(HttpRequest(exporter.port(), "DELETE", "/healthz").status, 405);
  EXPECT_EQ(HttpGet(exporter.port(), "/nothing-here").status, 404);
  EXPECT_EQ(exporter.process().Stop(10), 0) << "SIGTERM is a clean stop";
}

TEST(ExporterE2E, RunStartsTheNodeExporterWithTheJobAndStopsItWhenTheJobEnds) {
  ScratchDir scratch;
  BackgroundProcess run({Cli(), "run", "--dir", scratch / "trace", "--exporter=127.0.0.1:0", "--",
                         "sh", "-c", "sleep 3; exit 5"},
                        scratch / "run.log");
  const int port = run.WaitForPort(20);
  ASSERT_GT(port, 0) << run.Output();
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200) << "serving while the job runs";
  EXPECT_EQ(run.Wait(60), 5) << "the job's exit code, unchanged\n" << run.Output();
  EXPECT_EQ(HttpGet(port, "/healthz").status, 0) << "the exporter ended with the job";
}

TEST(ExporterE2E, RunReadsTheExporterAddressFromTheEnvironment) {
  ScratchDir scratch;
  BackgroundProcess run({"env", "NCCLSCOPE_EXPORTER=127.0.0.1:0", Cli(), "run", "--dir",
                         scratch / "trace", "--", "sh", "-c", "sleep 2"},
                        scratch / "run.log");
  const int port = run.WaitForPort(20);
  ASSERT_GT(port, 0) << run.Output();
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  EXPECT_EQ(run.Wait(60), 0) << run.Output();
}

// Under Slurm the node exporter `run` starts takes its peers from the job's node list, so the
// node of rank 0 serves the job view without more flags. The peers here answer nowhere: they are
// listed, and down.
TEST(ExporterE2E, RunUnderSlurmGivesTheNodeExporterItsPeers) {
  ScratchDir scratch;
  BackgroundProcess run(
      {"env", "SLURM_JOB_NODELIST=127.0.0.2,127.0.0.3", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0", Cli(),
       "run", "--dir", scratch / "trace", "--exporter=127.0.0.1:0", "--", "sh", "-c",
       "while [ ! -e '" + scratch / "done" + "' ]; do sleep 0.1; done"},
      scratch / "run.log");
  const int port = run.WaitForPort(20);
  ASSERT_GT(port, 0) << run.Output();
  std::string text;
  // The first correlation cycle runs once the exporter serves; poll until it lists its peers.
  for (int i = 0; i < 600 && text.find("127.0.0.3") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = HttpGet(port, "/metrics").body;
  }
  EXPECT_NE(text.find("ncclscope_exporter_role{"), std::string::npos) << text;
  EXPECT_NE(text.find("127.0.0.2"), std::string::npos) << text;
  EXPECT_NE(text.find("127.0.0.3"), std::string::npos) << text;
  // The job runs until the test has looked: its end stops the exporter.
  std::ofstream(scratch / "done").put('\n');
  EXPECT_EQ(run.Wait(60), 0) << run.Output();
}

TEST(ExporterE2E, OnlyLocalRankZeroStartsTheNodeExporter) {
  ScratchDir scratch;
  const ProcessResult p =
      RunProcess({Cli(), "run", "--dir", scratch / "trace", "--exporter=127.0.0.1:0", "--", "sh",
                  "-c", "sleep 1; exit 4"},
                 {{"LOCAL_RANK", "1"}}, 60);
  EXPECT_EQ(p.exit_code, 4);
  EXPECT_EQ(p.err.find("ncclscope exporter:"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace ncclscope::testing
