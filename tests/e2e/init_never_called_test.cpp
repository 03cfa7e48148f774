// A rank whose process is up but never calls NCCL (stuck in data loading, an import, before
// init_process_group) while the other ranks wait for it in the creation of world
// (sim/scenarios/never-join-world.json: the last rank never calls ncclCommInitRankConfig). Its
// presence file, written when the probe was loaded into it, makes it seen on its node: the
// analysis there names it as the culprit, alive, with its pid. A node that does not hold it still
// sees nothing of it and names nobody. Analysed live, while the job hangs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kNoInitRanks = 8;
// The hang lasts until the test ends it; the launcher's own timeout only guards against a test
// that dies before it does.
constexpr int kSimTimeoutS = 60;
// How long the analyses are retried for a verdict: the waits must first outlast analyze's 2 s
// stall threshold, after 8 processes started on a possibly loaded machine.
constexpr double kPatienceS = 45;

// `ncclscope sim` in its own process group, output discarded, ended by EndJob.
pid_t StartSim(const std::vector<std::string>& extra,
               const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {Cli(),        "sim",
                                   "--ranks",    std::to_string(kNoInitRanks),
                                   "--scenario", ScenarioPath("never-join-world.json"),
                                   "--timeout",  std::to_string(kSimTimeoutS)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (freopen("/dev/null", "w", stdout) == nullptr ||
        freopen("/dev/null", "w", stderr) == nullptr) {
      _exit(126);
    }
    setenv("NCCLSCOPE_RING_RECORDS", "1024", 1);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// The pids of the processes that wrote the files of `dir`: <host>-<pid>-<nonce or presence>.ring.
std::vector<int> WriterPids(const std::string& dir) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".ring") continue;
    const size_t last = name.rfind('-');
    const size_t before =
        last == std::string::npos || last == 0 ? std::string::npos : name.rfind('-', last - 1);
    if (before == std::string::npos) continue;
    pids.push_back(std::atoi(name.substr(before + 1, last - before - 1).c_str()));
  }
  return pids;
}

// Ends the hung job: its ranks are killed, so the launcher sees them die and removes the job's
// shared memory as it exits; only a launcher still there after that is killed with its group.
void EndJob(pid_t sim, const std::vector<std::string>& dirs) {
  if (sim <= 0) return;
  for (const std::string& dir : dirs) {
    for (int pid : WriterPids(dir)) {
      if (pid > 1 && getpgid(pid) == sim) kill(pid, SIGKILL);
    }
  }
  for (int i = 0; i < 300; ++i) {  // 30 s
    if (waitpid(sim, nullptr, WNOHANG) == sim) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(-sim, SIGKILL);
  kill(sim, SIGKILL);
  waitpid(sim, nullptr, 0);
}

nlohmann::json AnalyzeOrEmpty(const std::string& dir,
                              const std::map<std::string, std::string>& env = {}) {
  const ProcessResult r = RunProcess({Cli(), "analyze", "--json", dir}, env, 60);
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    return nlohmann::json::object();  // the directory is not there yet
  }
}

bool IsInitHang(const nlohmann::json& analysis) {
  const auto verdicts = analysis.value("verdicts", nlohmann::json::array());
  return !verdicts.empty() && verdicts[0].value("class", "") == "init-hang";
}

// The first analysis of `dir` whose headline is the init hang with `victims` waiting in it (each
// rank's wait counts once it passed the stall threshold, and ranks start at their own pace), or
// the last one tried.
nlohmann::json AnalyzeUntilInitHang(const std::string& dir, size_t victims,
                                    const std::map<std::string, std::string>& env = {}) {
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json j;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         kPatienceS) {
    j = AnalyzeOrEmpty(dir, env);
    if (IsInitHang(j) && j["verdicts"][0].value("victims", std::vector<int>{}).size() == victims) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return j;
}

std::vector<int> Unseen(const nlohmann::json& verdict) {
  std::vector<int> out;
  for (const auto& range : verdict.value("unseen_ranges", nlohmann::json::array())) {
    for (int r = range[0].get<int>(); r <= range[1].get<int>(); ++r) out.push_back(r);
  }
  return out;
}

// The pid a presence file's name carries: <host>-<pid>-presence.ring.
int PresencePid(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const std::string tail = "-presence.ring";
    if (name.size() <= tail.size() || name.compare(name.size() - tail.size(), tail.size(), tail)) {
      continue;
    }
    const std::string head = name.substr(0, name.size() - tail.size());
    return std::stoi(head.substr(head.rfind('-') + 1));
  }
  return -1;
}

TEST(InitNeverCalled, TheAliveRankThatNeverCalledNcclIsTheCulprit) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const pid_t sim = StartSim({"--dir", dir}, {});
  const nlohmann::json j = AnalyzeUntilInitHang(dir, kNoInitRanks - 1);
  const int pid = PresencePid(dir);
  EndJob(sim, {dir});
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(IsInitHang(j));
  const auto& v = j["verdicts"][0];
  EXPECT_EQ(v["comm_name"], "world");
  EXPECT_EQ(v["culprits"].get<std::vector<int>>(), std::vector<int>{kNoInitRanks - 1});
  EXPECT_EQ(v["victims"].get<std::vector<int>>(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(Unseen(v).empty());
  ASSERT_GT(pid, 0) << "no presence file in " << dir;
  EXPECT_EQ(v["summary"].get<std::string>(),
            "rank 7 is alive (pid " + std::to_string(pid) +
                " on this node) but never called NCCL: it never joined the creation of world; "
                "ranks 0-6 wait inside it");
  // A suspect: the rank is alive and may yet call; what it does is said.
  EXPECT_EQ(v["confirmed"], false);
  EXPECT_NE(v.value("activity", "").find("rank 7: alive (pid " + std::to_string(pid)),
            std::string::npos);
  EXPECT_NE(v.value("activity", "").find("never called NCCL"), std::string::npos);
  EXPECT_EQ(j["input"].value("ranks_seen", 0), kNoInitRanks);
}

TEST(InitNeverCalled, OnTwoNodesOnlyTheNodeOfTheRankNamesIt) {
  ScratchDir scratch;
  const std::string base = scratch / "traces";
  // Ranks 0-3 on node0, 4-7 on node1; rank 7 never calls NCCL.
  const pid_t sim = StartSim({"--nodes", "2", "--dir", base}, {{"NCCLSCOPE_JOB_ID", "job9"}});
  const std::string node0 = base + "/job9/node0";
  const std::string node1 = base + "/job9/node1";
  const nlohmann::json far = AnalyzeUntilInitHang(node0, 4);
  // The analysis of node1 runs as that node's host would: its processes are this host's.
  const nlohmann::json near = AnalyzeUntilInitHang(node1, 3, {{"NCCLSCOPE_HOST", "node1"}});
  const int pid = PresencePid(node1);
  EndJob(sim, {node0, node1});

  // node0 holds no file of rank 7: it is unseen there, and the culprit among the unseen.
  SCOPED_TRACE(far.dump(2));
  ASSERT_TRUE(IsInitHang(far));
  const auto& f = far["verdicts"][0];
  EXPECT_TRUE(f["culprits"].get<std::vector<int>>().empty());
  EXPECT_EQ(Unseen(f), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(f["summary"].get<std::string>(),
            "ranks 0-3 wait inside the creation of world; ranks 4-7 (no ring file or digest here) "
            "should join it: the culprit is among them");

  SCOPED_TRACE(near.dump(2));
  ASSERT_TRUE(IsInitHang(near));
  const auto& n = near["verdicts"][0];
  EXPECT_EQ(n["culprits"].get<std::vector<int>>(), std::vector<int>{7});
  EXPECT_EQ(Unseen(n), (std::vector<int>{0, 1, 2, 3}));
  ASSERT_GT(pid, 0) << "no presence file in " << node1;
  EXPECT_EQ(n["summary"].get<std::string>(),
            "rank 7 is alive (pid " + std::to_string(pid) +
                " on this node) but never called NCCL: it never joined the creation of world; "
                "ranks 4-6 wait inside it; ranks 0-3 not seen here");
}

}  // namespace
}  // namespace ncclscope::testing
