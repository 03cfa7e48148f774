// End to end: the shipped fault scenarios played by `ncclscope sim` at 8 and at 32 ranks (the probe
// preloaded), then `ncclscope analyze --json`, as a user runs them. Every scenario has three
// communicators (world and two splits, tp and dp). Most jobs hang and are killed by the
// launcher's --timeout, so they are analysed post mortem; freeze and crash are analysed while the
// job is still up, where the process checks see the stopped or vanished rank.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/hang_detector/summary_ranks.h"

namespace ncclscope::testing {
namespace {

// The launcher kills a hung job this long after its start. The faults strike within the first
// steps, but starting 32 ranks on a loaded 2-core machine has taken 2.5 s: the waits must still
// outlast analyze's 2 s stall threshold by then, or a second culprit's "never issued" (which
// needs that wait, unlike a desync) goes unreported (seen once at 3 s).
constexpr double kKillAfterS = 5;

struct Expected {
  const char* scenario;
  const char* cls;
  const char* comm;           // "" when not asserted (see the comment of that case)
  uint64_t seq;               // 0 when not asserted
  std::vector<int> culprits;  // -1: the last rank of the job
  bool live = false;          // analyse while the job runs instead of after the launcher killed it
  const char* op = "";
  // A second culprit the analysis must name in a verdict of its own ("" when none).
  const char* also_cls = "";
  std::vector<int> also_culprits = {};
  // Ranks the headline must list as not seen (no ring file); -1: the last rank of the job.
  std::vector<int> unseen = {};
};

struct ScenarioCase {
  Expected e;
  int ranks;
};

std::string Bin() {
  return NCCLSCOPE_TEST_BIN_DIR "/ncclscope";
}
std::string Scenario(const std::string& name) {
  return NCCLSCOPE_TEST_SOURCE_DIR "/sim/scenarios/" + name + ".json";
}

// Starts `ncclscope sim`, output discarded (the launcher prefixes every rank's lines).
pid_t StartSim(const std::string& scenario, int nranks, const std::string& dir, double timeout_s) {
  const std::string ranks = std::to_string(nranks), timeout = std::to_string(timeout_s);
  const std::string path = Scenario(scenario), bin = Bin();
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    std::vector<const char*> argv = {bin.c_str(),  "sim",        "--ranks", ranks.c_str(),
                                     "--scenario", path.c_str(), "--dir",   dir.c_str()};
    if (timeout_s > 0) {
      argv.push_back("--timeout");
      argv.push_back(timeout.c_str());
    }
    argv.push_back(nullptr);
    execv(bin.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  return pid;
}

nlohmann::json Analyze(const std::string& dir, int* exit_code) {
  const std::string cmd = Bin() + " analyze " + dir + " --json";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return nlohmann::json::parse(out);
}

class AnalyzeScenario : public ::testing::TestWithParam<ScenarioCase> {};

TEST_P(AnalyzeScenario, NamesClassCommunicatorSequenceAndCulprits) {
  const Expected& e = GetParam().e;
  const int ranks = GetParam().ranks;
  std::vector<int> culprits = e.culprits;
  for (int& r : culprits) {
    if (r < 0) r += ranks;
  }
  char tmpl[] = "/tmp/ncclscope-hd-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/trace";
  const bool healthy = std::string(e.cls) == "healthy";
  nlohmann::json j;
  int code = -1;
  if (e.live) {
    // The launcher must not have killed the job before analyze has seen it: a stopped rank that
    // was killed reads as dead. A loaded machine can take seconds to start and run analyze, and
    // the launcher's timeout is the only clean way to end a job with a stopped rank.
    const double margin_s = std::string(e.cls) == "frozen" ? 20 : 2;
    const pid_t sim = StartSim(e.scenario, ranks, dir, kKillAfterS + margin_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kKillAfterS * 1000)));
    j = Analyze(dir, &code);
    waitpid(sim, nullptr, 0);
  } else if (healthy) {
    waitpid(StartSim(e.scenario, ranks, dir, 0), nullptr, 0);
    j = Analyze(dir, &code);
  } else {
    // A loaded machine can start 32 ranks so slowly that the launcher's kill comes before the
    // fault has stalled the job for analyze's threshold: the job then reads as healthy, or as not
    // yet created. That is the kill's timing, not the analysis: the job runs again with twice the
    // time, up to 20 s (seen at load 12 with 32 ranks).
    for (double kill_s = kKillAfterS;; kill_s *= 2) {
      const std::string run_dir = dir + "-" + std::to_string(static_cast<int>(kill_s));
      waitpid(StartSim(e.scenario, ranks, run_dir, kill_s), nullptr, 0);
      j = Analyze(run_dir, &code);
      const std::string first =
          j["verdicts"].empty() ? "" : j["verdicts"][0]["class"].get<std::string>();
      const bool killed_too_soon =
          first == "healthy" || (first == "init-hang" && std::string(e.cls) != "init-hang");
      if (!killed_too_soon || kill_s >= 20) break;
    }
  }
  std::filesystem::remove_all(tmpl);
  SCOPED_TRACE(j.dump(2));
  ASSERT_FALSE(j["verdicts"].empty());
  // Whatever the scenario, every verdict's text blames exactly the ranks its culprit list holds.
  for (const auto& any : j["verdicts"]) {
    EXPECT_EQ(SummaryDisagreement(any["summary"].get<std::string>(),
                                  any["culprits"].get<std::vector<int>>(), any["tie"].get<bool>()),
              "")
        << any["summary"];
  }
  const auto& v = j["verdicts"][0];
  if (healthy) {
    // What the design guarantees for a healthy job: no hang, suspect or desync, whatever the
    // machine's load. Whether it is also free of a straggler verdict is a matter of timing: 32
    // emulated ranks starved of CPU next to other builds really do transfer 1.6x slower for a
    // while (seen once at load 14). The false-straggler rate is measured by
    // scripts/straggler_accuracy.sh (docs/performance.md, "Straggler accuracy").
    for (const auto& any : j["verdicts"]) {
      EXPECT_TRUE(any["class"] == "healthy" || any["class"] == "straggler") << any["class"];
    }
    EXPECT_TRUE(code == 0 || code == 1) << code;
    return;
  }
  EXPECT_EQ(v["class"], e.cls);
  EXPECT_EQ(code, 2);
  if (*e.also_cls != '\0') {
    const bool named =
        std::any_of(j["verdicts"].begin() + 1, j["verdicts"].end(), [&](const nlohmann::json& o) {
          return o["class"] == e.also_cls &&
                 o["culprits"].get<std::vector<int>>() == e.also_culprits;
        });
    EXPECT_TRUE(named) << "no " << e.also_cls << " verdict naming the second culprit";
  }
  EXPECT_EQ(v["culprits"].get<std::vector<int>>(), culprits);
  std::vector<int> unseen;
  for (const auto& range : v["unseen_ranges"]) {
    for (int r = range[0].get<int>(); r <= range[1].get<int>(); ++r) unseen.push_back(r);
  }
  std::vector<int> expected_unseen = e.unseen;
  for (int& r : expected_unseen) {
    if (r < 0) r += ranks;
  }
  EXPECT_EQ(unseen, expected_unseen);
  if (*e.comm != '\0') {
    EXPECT_EQ(v["comm_name"], e.comm);
  }
  if (e.seq != 0) {
    EXPECT_EQ(v["seq"], e.seq);
  }
  if (*e.op != '\0') {
    EXPECT_EQ(v["op"], e.op);
  }
  EXPECT_FALSE(v["evidence"].empty());
}

// Without the profiler plugin nothing tells which device is stuck: every member stays a suspect.
// (Parameterized only to be instantiated as Shipped/, the label of the end-to-end runs.)
class AnalyzeWithoutProfiler : public ::testing::TestWithParam<const char*> {};

TEST_P(AnalyzeWithoutProfiler, DeviceStallIsATie) {
  char tmpl[] = "/tmp/ncclscope-hd-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/trace";
  setenv("NCCL_PROFILER_PLUGIN", "none", 1);  // the launcher keeps a user's choice
  waitpid(StartSim(GetParam(), 8, dir, kKillAfterS), nullptr, 0);
  unsetenv("NCCL_PROFILER_PLUGIN");
  int code = -1;
  const nlohmann::json j = Analyze(dir, &code);
  std::filesystem::remove_all(tmpl);
  SCOPED_TRACE(j.dump(2));
  ASSERT_FALSE(j["verdicts"].empty());
  const auto& v = j["verdicts"][0];
  EXPECT_EQ(v["class"], "device-stall");
  EXPECT_EQ(v["culprits"].get<std::vector<int>>(), (std::vector<int>{0, 1}));
  EXPECT_EQ(v["tie"], true);
}
INSTANTIATE_TEST_SUITE_P(Shipped, AnalyzeWithoutProfiler, ::testing::Values("hang"));

// Sequence numbers follow the scenarios' step lists: tp holds two collectives per repetition,
// dp and world one each. A dead rank stalls several communicators at once; which wait began
// first is a matter of microseconds, so only its class and culprit are asserted. The world
// communicator's name is only recorded once its creation returns, so a rank that never joins it
// leaves it nameless. stuck-before is a hang inside a split (dp) while world stays healthy.
std::vector<ScenarioCase> Catalogue(int ranks) {
  const std::vector<Expected> expected = {
      {"healthy", "healthy", "", 0, {}},
      {"stuck-before", "missing", "dp", 2, {2}},
      // The profiler plugin's device start records single out the rank whose stream is blocked.
      {"hang", "device-stall", "tp", 3, {1}, false, "allreduce"},
      // The same in a bucket group NCCL launches largest-type-first, smallest first within a type
      // (#6 before #4): every peer's start of #4 must be recorded for rank 1 to stand out.
      {"hang-coalesced", "device-stall", "dp", 4, {1}, false, "allreduce"},
      // Every kernel started; the stuck allreduce was issued before any suspicion turned proxy
      // detail on, so at the default NCCLSCOPE_PROFILER_PROXY its two ends tie (localized to the
      // link with it always on: tests/e2e/stall_stage_e2e_test.cpp).
      {"hung-link", "device-stall", "tp", 3, {0, 1}, false, "allreduce"},
      {"skip", "desync", "tp", 3, {3}},
      {"extra-op", "desync", "tp", 4, {1}},
      {"wrong-op", "desync", "tp", 3, {1}},
      {"wrong-count", "desync", "dp", 2, {0}},
      {"wrong-dtype", "desync", "dp", 2, {2}},
      {"wrong-redop", "desync", "dp", 2, {3}},
      {"wrong-root", "desync", "world", 2, {2}},
      {"wrong-peer", "p2p-deadlock", "world", 2, {0}, false, "recv"},
      {"p2p-cycle", "p2p-deadlock", "world", 2, {2, 3}, false, "send"},
      {"crash-sigkill", "dead", "", 0, {1}, true},
      {"crash-abort", "dead", "", 0, {2}},
      {"crash-segfault", "dead", "", 0, {3}},
      {"early-exit", "dead", "", 0, {3}},
      {"freeze", "frozen", "dp", 2, {2}, true},
      {"never-join", "init-hang", "world", 2, {1, 2}, false, "comm_split"},
      // The rank that never called NCCL made no ring file, but the presence file the probe wrote
      // when it started shows it seen, and never in NCCL: the culprit, post mortem too.
      {"never-join-world", "init-hang", "", 0, {-1}},
      // Two culprits at one collective: the disagreement leads; the silent rank is named too.
      {"desync-and-missing", "desync", "dp", 2, {0}, false, "allreduce", "missing", {2}},
      // Ranks waiting in a receive from a stuck stage never send on: only the stuck stage.
      {"pipeline-chain", "p2p-deadlock", "pp", 2, {1}},
  };
  std::vector<ScenarioCase> cases;
  for (const Expected& e : expected) cases.push_back({e, ranks});
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<ScenarioCase>& info) {
  std::string name = info.param.e.scenario;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Shipped, AnalyzeScenario, ::testing::ValuesIn(Catalogue(8)), CaseName);
// 32 processes each: registered to run one at a time (tests/hang_detector/CMakeLists.txt).
INSTANTIATE_TEST_SUITE_P(Shipped32, AnalyzeScenario, ::testing::ValuesIn(Catalogue(32)), CaseName);

}  // namespace
}  // namespace ncclscope::testing
