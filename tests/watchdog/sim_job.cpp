#include "tests/watchdog/sim_job.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <sstream>

#include "tests/watchdog/text_file.h"

namespace ncclscope::testing {
namespace {

std::string Bin() {
  return NCCLSCOPE_TEST_BIN_DIR "/ncclscope";
}

// The output of a command run without a shell; its exit code in *code.
std::string Capture(const std::vector<std::string>& argv, int* code) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    freopen("/dev/null", "w", stderr);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace

Root::Root() {
  char tmpl[] = "/tmp/ncclscope-wd-e2e-XXXXXX";
  path = mkdtemp(tmpl);
}

Root::~Root() {
  std::filesystem::remove_all(path);
}

std::string Shipped(const std::string& name) {
  return NCCLSCOPE_TEST_SOURCE_DIR "/sim/scenarios/" + name + ".json";
}

SimJob StartSim(const SimSpec& spec, const std::string& root) {
  static std::atomic<int> started{0};
  SimJob job;
  job.dir = spec.dir.empty() ? root + "/trace" : spec.dir;
  job.err_path = root + "/stderr-" + std::to_string(started++) + ".txt";
  job.timeout_s = spec.timeout_s;
  const std::string bin = Bin();
  const std::string timeout = std::to_string(spec.timeout_s);
  const std::string ranks = std::to_string(spec.ranks), nodes = std::to_string(spec.nodes);
  job.start_realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  job.t0 = std::chrono::steady_clock::now();
  job.pid = fork();
  if (job.pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen(job.err_path.c_str(), "w", stderr);
    for (const std::string& e : spec.env) putenv(const_cast<char*>(e.c_str()));
    std::vector<const char*> argv = {bin.c_str(),    "sim",           "--ranks",
                                     ranks.c_str(),  "--scenario",    spec.scenario_path.c_str(),
                                     "--dir",        job.dir.c_str(), "--timeout",
                                     timeout.c_str()};
    if (spec.nodes > 1) {
      argv.push_back("--nodes");
      argv.push_back(nodes.c_str());
    }
    if (spec.fail_fast) argv.push_back("--fail-fast");
    argv.push_back(nullptr);
    execv(bin.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  return job;
}

bool Ended(const SimJob& job) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(job.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid != 0;
}

void WaitSim(SimJob* job) {
  int status = 0;
  waitpid(job->pid, &status, 0);
  job->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - job->t0).count();
  job->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  job->err = ReadFile(job->err_path);
}

namespace {

// The file of dir whose name starts with `prefix` and has `length` characters; "" when none.
std::string FindByPrefix(const std::string& dir, const std::string& prefix, size_t length) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return "";
  std::string found;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0 && name.size() == length) found = dir + "/" + name;
  }
  closedir(d);
  return found;
}

}  // namespace

std::vector<int> Holders(const std::string& dir) {
  std::vector<int> pids;
  // .watchdog-<16 hex>.lock
  std::istringstream in(ReadFile(FindByPrefix(dir, ".watchdog-", 10 + 16 + 5)));
  for (std::string line; std::getline(in, line);) pids.push_back(std::atoi(line.c_str()));
  return pids;
}

RecordView ReadIncident(const std::string& dir) {
  RecordView v;
  const std::string path = FindByPrefix(dir, ".incident-", 10 + 16);
  if (path.empty()) return v;
  v.text = ReadFile(path);
  std::istringstream in(v.text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("holder ", 0) == 0) v.holder = std::atoi(line.c_str() + 7);
    if (line.rfind("stage ", 0) == 0) v.stage = line.substr(6);
    if (line.rfind("mode ", 0) == 0) v.mode = line.substr(5);
  }
  return v;
}

std::set<int> AbortingRanks(const std::string& err) {
  std::set<int> ranks;
  const std::string key = "NCCLSCOPE_ON_HANG=abort: aborted communicator ";
  for (size_t at = err.find(key); at != std::string::npos; at = err.find(key, at + 1)) {
    const size_t of = err.find(" of rank ", at);
    if (of != std::string::npos) ranks.insert(std::atoi(err.c_str() + of + 9));
  }
  return ranks;
}

std::map<int, double> WatchdogAbortTimes(const std::vector<std::string>& dirs) {
  std::map<int, double> first;
  for (const std::string& dir : dirs) {
    int code = 0;
    const std::string out = Capture({Bin(), "dump", dir, "--json"}, &code);
    std::istringstream in(out);
    double offset_s = 0;
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;
      if (j["type"] == "header") {
        offset_s =
            (j["start_realtime_ns"].get<double>() - j["start_monotonic_ns"].get<double>()) * 1e-9;
      } else if (j["type"] == "record" && j.value("by_watchdog", false)) {
        const double t = j["t_enter_ns"].get<double>() * 1e-9 + offset_s;
        const int rank = j["rank"].get<int>();
        if (first.count(rank) == 0 || t < first[rank]) first[rank] = t;
      }
    }
  }
  return first;
}

int PidOfRank(const std::vector<std::string>& dirs, int rank) {
  for (const std::string& dir : dirs) {
    int code = 0;
    std::istringstream in(Capture(
        {Bin(), "dump", dir, "--json", "--rank", std::to_string(rank), "--tail", "1"}, &code));
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j["type"] == "header" && j["rank"] == rank) return j["pid"];
    }
  }
  return 0;
}

int RunAnalyze(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv = {Bin(), "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  int code = -1;
  *out = Capture(argv, &code);
  return code;
}

}  // namespace ncclscope::testing
