// End to end without the interposer: the shipped fault scenarios played by `ncclscope sim
// --no-probe` with NCCL_PROFILER_PLUGIN=libncclscope.so, the setup of a job whose NCCL is linked
// statically (no LD_PRELOAD can reach it), then `ncclscope analyze --json`. The profiler's events
// alone (plugin/profiler/plugin_only_recorder.h) must give the verdicts the interposer gives,
// except those that need what only an interposed call shows (NeedsTheInterposer below,
// plugin/README.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ncclscope::testing {
namespace {

// As the interposer's catalogue test: faults strike in the first steps; the launcher kills the
// job this long after its start, past analyze's 2 s stall threshold even on a loaded machine.
constexpr double kJobSeconds = 5;
constexpr int kPluginOnlyRanks = 8;

struct PluginOnlyCase {
  const char* scenario;
  const char* cls;
  const char* comm;  // "" when not asserted
  uint64_t seq;      // 0 when not asserted
  std::vector<int> culprits;
  bool live = false;  // analyse while the job still runs (a stopped or vanished rank)
};

// One job: a forked `ncclscope sim --no-probe` with the plugin named in its environment.
class PluginOnlyJob {
 public:
  explicit PluginOnlyJob(const std::string& scenario, double kill_after_s) {
    char tmpl[] = "/tmp/ncclscope-po-XXXXXX";
    root_ = mkdtemp(tmpl);
    const std::string bin = std::string(NCCLSCOPE_TEST_BIN_DIR) + "/ncclscope";
    const std::string file =
        std::string(NCCLSCOPE_TEST_SOURCE_DIR) + "/sim/scenarios/" + scenario + ".json";
    const std::string ranks = std::to_string(kPluginOnlyRanks), kill = std::to_string(kill_after_s);
    const std::string dir = Dir();
    pid_ = fork();
    if (pid_ == 0) {
      setenv("NCCL_PROFILER_PLUGIN", NCCLSCOPE_TEST_PROBE_LIBRARY, 1);
      unsetenv("LD_PRELOAD");
      // Nor the NVTX injection: NCCL's own ranges (the reduction op) are the subject of
      // tests/e2e/plugin_only_nvtx_redop_test.cpp.
      unsetenv("NVTX_INJECTION64_PATH");
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execl(bin.c_str(), bin.c_str(), "sim", "--no-probe", "--ranks", ranks.c_str(), "--scenario",
            file.c_str(), "--dir", dir.c_str(), "--timeout", kill.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~PluginOnlyJob() {
    Wait();
    std::filesystem::remove_all(root_);
  }
  std::string Dir() const { return root_ + "/trace"; }
  void Wait() {
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // `ncclscope analyze --json` of the job's directory; *code its exit status.
  nlohmann::json Analyze(int* code) const {
    const std::string out = root_ + "/verdicts.json";
    const std::string cmd =
        std::string(NCCLSCOPE_TEST_BIN_DIR) + "/ncclscope analyze " + Dir() + " --json > " + out;
    const int status = std::system(cmd.c_str());
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str(), nullptr, false);
  }

 private:
  std::string root_;
  pid_t pid_ = -1;
};

// The verdicts of a scenario's job: post mortem, or while it runs (live).
nlohmann::json Verdicts(const PluginOnlyCase& c, int* code) {
  if (!c.live) {
    PluginOnlyJob job(c.scenario, kJobSeconds);
    job.Wait();
    return job.Analyze(code);
  }
  // A stopped rank that the launcher killed reads as dead: analyse before its timeout.
  const double margin_s = std::string(c.cls) == "frozen" ? 20 : 2;
  PluginOnlyJob job(c.scenario, kJobSeconds + margin_s);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kJobSeconds * 1000)));
  return job.Analyze(code);
}

class PluginOnlyScenario : public ::testing::TestWithParam<PluginOnlyCase> {};

TEST_P(PluginOnlyScenario, NamesClassCommunicatorSequenceAndCulprits) {
  const PluginOnlyCase& c = GetParam();
  int code = -1;
  const nlohmann::json j = Verdicts(c, &code);
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(j.is_object());
  ASSERT_FALSE(j["verdicts"].empty());
  const auto& v = j["verdicts"][0];
  if (std::string(c.cls) == "healthy") {
    for (const auto& any : j["verdicts"]) {
      EXPECT_TRUE(any["class"] == "healthy" || any["class"] == "straggler") << any["class"];
    }
    return;
  }
  EXPECT_EQ(code, 2);
  EXPECT_EQ(v["class"], c.cls);
  EXPECT_EQ(v["culprits"].get<std::vector<int>>(), c.culprits);
  if (*c.comm != '\0') {
    EXPECT_EQ(v["comm_name"], c.comm);
  }
  if (c.seq != 0) {
    EXPECT_EQ(v["seq"], c.seq);
  }
}

// The interposer's catalogue (analyze_scenarios_test.cpp) at 8 ranks: same classes, names,
// sequence numbers and culprits. Desyncs in a two-rank tp group are settled by its sibling groups
// of the same name (the profiler does not say which communicator a split came from).
INSTANTIATE_TEST_SUITE_P(
    Shipped, PluginOnlyScenario,
    ::testing::Values(PluginOnlyCase{"healthy", "healthy", "", 0, {}},
                      PluginOnlyCase{"stuck-before", "missing", "dp", 2, {2}},
                      PluginOnlyCase{"hang", "device-stall", "tp", 3, {1}},
                      PluginOnlyCase{"skip", "desync", "tp", 3, {3}},
                      PluginOnlyCase{"extra-op", "desync", "tp", 4, {1}},
                      PluginOnlyCase{"wrong-op", "desync", "tp", 3, {1}},
                      PluginOnlyCase{"wrong-count", "desync", "dp", 2, {0}},
                      PluginOnlyCase{"wrong-dtype", "desync", "dp", 2, {2}},
                      PluginOnlyCase{"wrong-root", "desync", "world", 2, {2}},
                      PluginOnlyCase{"wrong-peer", "p2p-deadlock", "world", 2, {0}},
                      PluginOnlyCase{"p2p-cycle", "p2p-deadlock", "world", 2, {2, 3}},
                      PluginOnlyCase{"crash-sigkill", "dead", "", 0, {1}, true},
                      PluginOnlyCase{"crash-abort", "dead", "", 0, {2}},
                      PluginOnlyCase{"crash-segfault", "dead", "", 0, {3}},
                      PluginOnlyCase{"early-exit", "dead", "", 0, {3}},
                      PluginOnlyCase{"freeze", "frozen", "dp", 2, {2}, true},
                      PluginOnlyCase{"desync-and-missing", "desync", "dp", 2, {0}},
                      PluginOnlyCase{"pipeline-chain", "p2p-deadlock", "pp", 2, {1}}),
    [](const ::testing::TestParamInfo<PluginOnlyCase>& info) {
      std::string name = info.param.scenario;
      for (char& ch : name) ch = ch == '-' ? '_' : ch;
      return name;
    });

// The in-process watchdog runs in plugin-only mode too (the runtime the profiler's init created
// starts the background thread): on the hang it publishes the suspect verdict.json by itself,
// while the job still hangs (the launcher ends it after kWatchSeconds, long after the stall rule
// fires). Parameterized only to be instantiated as Shipped/, the label of the end-to-end runs.
class PluginOnlyWatchdog : public ::testing::TestWithParam<const char*> {};

TEST_P(PluginOnlyWatchdog, PublishesTheSuspectWhileTheJobHangs) {
  constexpr int kWatchSeconds = 20;
  PluginOnlyJob job(GetParam(), kWatchSeconds);
  const std::string path = job.Dir() + "/verdict.json";
  nlohmann::json v;
  for (int i = 0; i < kWatchSeconds * 20 && !v.is_object(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(path);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    v = nlohmann::json::parse(text.str(), nullptr, false);  // renamed into place: whole or absent
  }
  SCOPED_TRACE(v.dump(2));
  ASSERT_TRUE(v.is_object()) << "no verdict.json from the watchdog in " << job.Dir();
  EXPECT_EQ(v["stage"], "suspect");
  ASSERT_FALSE(v["verdicts"].empty());
  EXPECT_EQ(v["verdicts"][0]["class"], "device-stall");
  EXPECT_EQ(v["verdicts"][0]["comm_name"], "tp");
  EXPECT_EQ(v["verdicts"][0]["culprits"].get<std::vector<int>>(), std::vector<int>{1});
}
INSTANTIATE_TEST_SUITE_P(Shipped, PluginOnlyWatchdog, ::testing::Values("hang"));

// What only the interposer sees. The reduction op is in no profiler event, so ranks that disagree
// only on it are not a desync here, where libncclscope.so is not the NVTX injection too (with it,
// NCCL's range around the call gives the op: tests/e2e/plugin_only_nvtx_redop_test.cpp). A
// communicator enters the ring at the profiler's init, which NCCL calls after the creation's
// bootstrap: ranks stuck in ncclCommSplit before it (never-join) show nothing, and a job whose
// world communicator never forms has no ring file at all.
class NeedsTheInterposer : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(NeedsTheInterposer, ThePluginAloneDoesNotGiveTheVerdict) {
  int code = -1;
  const nlohmann::json j = Verdicts({GetParam().first, "", "", 0, {}}, &code);
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(j.is_object());
  for (const auto& v : j["verdicts"]) EXPECT_NE(v["class"], GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(Shipped, NeedsTheInterposer,
                         ::testing::Values(std::make_pair("wrong-redop", "desync"),
                                           std::make_pair("never-join", "init-hang")),
                         [](const auto& info) {
                           std::string name = info.param.first;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace ncclscope::testing
