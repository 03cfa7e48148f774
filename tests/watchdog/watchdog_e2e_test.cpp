// End to end: 8-rank jobs on the emulator with the probe preloaded and its watchdog on (defaults).
// A hang must leave one verdict.json in the trace directory, with the right class and culprits,
// reported once across all ranks and within the detection target; healthy and slow-but-progressing
// jobs must leave none; NCCLSCOPE_ON_HANG=abort must end a hung job before its launcher's timeout.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ncclscope::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTimeoutS = 12;
constexpr double kDetectionTargetS = 10;

std::string Bin() {
  return NCCLSCOPE_TEST_BIN_DIR "/ncclscope";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Job {
  std::string dir;    // the trace directory
  std::string err;    // the launcher's stderr (every rank's, prefixed)
  double wall_s = 0;  // how long `ncclscope sim` ran
  int64_t start_realtime_ns = 0;
};

// Runs `ncclscope sim` to its end; env_abort sets NCCLSCOPE_ON_HANG=abort in the ranks.
Job RunSim(const std::string& scenario, bool abort_mode, const std::string& root) {
  Job job;
  job.dir = root + "/trace";
  const std::string err_path = root + "/stderr.txt";
  const std::string path = NCCLSCOPE_TEST_SOURCE_DIR "/sim/scenarios/" + scenario + ".json";
  const std::string timeout = std::to_string(kTimeoutS), bin = Bin();
  job.start_realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen(err_path.c_str(), "w", stderr);
    if (abort_mode) setenv("NCCLSCOPE_ON_HANG", "abort", 1);
    std::vector<const char*> argv = {bin.c_str(),  "sim",          "--ranks", "8",
                                     "--scenario", path.c_str(),   "--dir",   job.dir.c_str(),
                                     "--timeout",  timeout.c_str()};
    if (abort_mode) argv.push_back("--fail-fast");
    argv.push_back(nullptr);
    execv(bin.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  waitpid(pid, nullptr, 0);
  job.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  job.err = ReadFile(err_path);
  return job;
}

struct Root {
  Root() {
    char tmpl[] = "/tmp/ncclscope-wd-e2e-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Root() { std::filesystem::remove_all(path); }
  std::string path;
};

struct HangCase {
  const char* scenario;
  const char* cls;
  const char* comm;
  std::vector<int> culprits;
};

class WatchdogHang : public ::testing::TestWithParam<HangCase> {};

TEST_P(WatchdogHang, WritesOneVerdictWithinTheTarget) {
  const HangCase& c = GetParam();
  Root root;
  const Job job = RunSim(c.scenario, false, root.path);
  SCOPED_TRACE(job.err);
  const std::string file = job.dir + "/verdict.json";
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0) << "no verdict.json";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto j = nlohmann::json::parse(ReadFile(file));
  const auto& v = j["verdicts"][0];
  EXPECT_EQ(v["class"], c.cls);
  EXPECT_EQ(v["comm_name"], c.comm);
  EXPECT_EQ(v["culprits"].get<std::vector<int>>(), c.culprits);
  EXPECT_EQ(j["exit_code"], 2);
  // Reported once across the 8 ranks.
  EXPECT_EQ(Count(job.err, "verdict written to"), 1);
  // The victims' wait when the verdict was reached is the detection latency (the fault strikes
  // within milliseconds of the start); the file must also be there well before the timeout.
  EXPECT_LE(v["since_s"].get<double>(), kDetectionTargetS);
  const int64_t mtime = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
  EXPECT_LE(static_cast<double>(mtime - job.start_realtime_ns) * 1e-9, kDetectionTargetS);
}

INSTANTIATE_TEST_SUITE_P(Shipped, WatchdogHang,
                         ::testing::Values(HangCase{"stuck-before", "missing", "dp", {2}},
                                           HangCase{"hang", "device-stall", "tp", {1}},
                                           HangCase{"never-join", "init-hang", "world", {1, 2}},
                                           HangCase{"skip", "desync", "tp", {3}}),
                         [](const ::testing::TestParamInfo<HangCase>& info) {
                           std::string name = info.param.scenario;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

class WatchdogQuiet : public ::testing::TestWithParam<const char*> {};

TEST_P(WatchdogQuiet, ProgressingJobsGetNoVerdict) {
  Root root;
  const Job job = RunSim(GetParam(), false, root.path);
  SCOPED_TRACE(job.err);
  EXPECT_FALSE(std::filesystem::exists(job.dir + "/verdict.json"));
  EXPECT_EQ(Count(job.err, "ncclscope: watchdog"), 0);
  EXPECT_LT(job.wall_s, kTimeoutS);  // it finished
}

INSTANTIATE_TEST_SUITE_P(Shipped, WatchdogQuiet, ::testing::Values("healthy", "compute-straggler"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

TEST(WatchdogAbort, AbortedCommunicatorsEndTheJobBeforeTheTimeout) {
  Root root;
  const Job job = RunSim("stuck-before", true, root.path);
  SCOPED_TRACE(job.err);
  EXPECT_TRUE(std::filesystem::exists(job.dir + "/verdict.json"));
  EXPECT_GE(Count(job.err, "NCCLSCOPE_ON_HANG=abort: aborted communicator dp"), 1);
  // A victim noticed through its error handling (ncclCommGetAsyncError) and failed the job. The
  // probe answered for the freed handle (NCCL must not see it again): a remote error.
  EXPECT_GE(Count(job.err, "(aborted?): remote process exited or there was a network error"), 1);
  // Ended by the abort, not by the launcher's timeout (no margin on wall time: under load the
  // abort path itself can take seconds).
  EXPECT_EQ(Count(job.err, "timeout after"), 0);
  EXPECT_LT(job.wall_s, kTimeoutS);
}

TEST(AnalyzeWatch, PrintsTheHangLiveAndEndsWithTheJob) {
  Root root;
  const std::string dir = root.path + "/trace";
  const std::string out = root.path + "/watch.txt";
  // The watcher starts before the job's files exist and must wait for them.
  const std::string watch = Bin() + " analyze " + dir + " --watch --json > " + out + " 2>/dev/null";
  const pid_t watcher = fork();
  if (watcher == 0) {
    execl("/bin/sh", "sh", "-c", watch.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  RunSim("stuck-before", false, root.path);
  int status = 0;
  const auto t0 = Clock::now();
  pid_t got = 0;
  while ((got = waitpid(watcher, &status, WNOHANG)) == 0 &&
         Clock::now() - t0 < std::chrono::seconds(10)) {
    usleep(100'000);
  }
  if (got == 0) kill(watcher, SIGKILL), waitpid(watcher, &status, 0);
  ASSERT_EQ(got, watcher) << "--watch did not end with the job";
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string text = ReadFile(out);
  bool saw_missing = false;
  size_t lines = 0;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    const auto j = nlohmann::json::parse(text.substr(at, nl - at));
    ++lines;
    saw_missing |= j["verdicts"][0]["class"] == "missing";
  }
  EXPECT_TRUE(saw_missing) << text;
  EXPECT_LT(lines, 10u) << "printed more than on changes";
}

}  // namespace
}  // namespace ncclscope::testing
