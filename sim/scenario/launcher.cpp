#include "sim/scenario/launcher.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "sim/scenario/accel_env.h"
#include "sim/scenario/comm_layout.h"
#include "sim/scenario/launcher_env.h"
#include "sim/scenario/rank_exit_codes.h"
#include "sim/scenario/rank_processes.h"
#include "sim/scenario/scenario_parser.h"
#include "trace/trace_dir.h"

extern char** environ;

namespace ncclscope::sim {
namespace {

bool makeTraceDir(std::string& dir, const std::string& tag, std::string& error) {
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = fmt::format("{}/ncclscope-sim-{}", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", tag);
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    error = fmt::format("cannot create trace directory {}: {}", dir, std::strerror(errno));
    return false;
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    error = fmt::format("{} exists and is not a directory", dir);
    return false;
  }
  return true;
}

// Simulated nodes: <base>/<job>/node<k> for each node, every level private (the layout the probe
// uses on real nodes, trace/job_layout.h). The base is created when missing.
bool makeNodeDirs(const std::string& base, const JobEnv& job, int nodes,
                  std::vector<std::string>& dirs, std::string& error) {
  for (int k = 0; k < nodes; ++k) {
    std::string dir;
    if (!trace::EnsurePrivateSubdirs(base, false, {job.job_id, NodeHost(k)}, &dir, &error)) {
      return false;
    }
    dirs.push_back(dir);
  }
  return true;
}

// A private directory for the job's unique id file, removed by the caller.
bool makeRunDir(const std::string& tag, std::string& dir, std::string& error) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/ncclscope-sim-{}-run-XXXXXX",
                                 tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", tag);
  if (mkdtemp(path.data()) == nullptr) {
    error = fmt::format("cannot create a run directory {}: {}", path, std::strerror(errno));
    return false;
  }
  dir = path;
  return true;
}

// The emulator names its shared memory /ncclsim-<tag>-*; a killed job leaves them behind.
int removeShm(const std::string& tag) {
  glob_t g{};
  const std::string pattern = fmt::format("/dev/shm/ncclsim-{}-*", tag);
  int removed = 0;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) removed += unlink(g.gl_pathv[i]) == 0 ? 1 : 0;
  }
  globfree(&g);
  return removed;
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

std::string whyFailed(const RankOutcome& r) {
  if (r.timed_out) return "timed out (still running; killed)";
  if (r.signal != 0) return fmt::format("killed by {}", signalName(r.signal));
  const std::string_view meaning = rankExitMeaning(r.exit_code);
  return meaning.empty() ? fmt::format("exit {}", r.exit_code)
                         : fmt::format("exit {} ({})", r.exit_code, meaning);
}

bool checkFile(const std::string& path, const char* what, const char* hint, std::ostream& err) {
  if (access(path.c_str(), R_OK) == 0) return true;
  err << fmt::format("ncclscope sim: {} not found at {} ({})\n", what, path, hint);
  return false;
}

// One line per failed rank, and the job's exit code.
int report(const std::vector<RankOutcome>& outcomes, const std::vector<int>& late, double timeout_s,
           std::ostream& out, std::ostream& err) {
  if (!late.empty()) {
    err << fmt::format(
        "ncclscope sim: timeout after {} s: ranks {} still running (the job hung); killed them\n",
        timeout_s, joinRanks(late));
  }
  int failed = 0;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    const RankOutcome& o = outcomes[r];
    if (!o.timed_out && o.signal == 0 && o.exit_code == 0) continue;
    ++failed;
    err << fmt::format("ncclscope sim: rank {}: {}\n", r, whyFailed(o));
  }
  if (failed == 0) {
    out << fmt::format("ncclscope sim: all {} ranks finished with correct results\n",
                       outcomes.size());
    return kSimOk;
  }
  err << fmt::format("ncclscope sim: job failed: {} of {} ranks\n", failed, outcomes.size());
  return kSimJobFailed;
}

}  // namespace

int runSim(const SimOptions& opt, std::ostream& out, std::ostream& err) {
  if (opt.ranks < 1) {
    err << "ncclscope sim: --ranks must be at least 1\n";
    return kSimSetupError;
  }
  if (opt.nodes < 0 || (opt.nodes > 0 && opt.ranks % opt.nodes != 0)) {
    err << fmt::format(
        "ncclscope sim: --nodes {} does not split {} ranks into equal nodes (a divisor of "
        "--ranks)\n",
        opt.nodes, opt.ranks);
    return kSimSetupError;
  }
  Scenario parsed;
  try {
    parsed = parseScenarioFile(opt.scenario);
    checkScenarioForRanks(parsed, opt.ranks);
  } catch (const ScenarioError& e) {
    err << "ncclscope sim: invalid scenario: " << e.what() << '\n';
    return kSimSetupError;
  }
  const std::string exe_dir = selfExeDir();
  const std::string program =
      opt.rank_program.empty() ? exe_dir + "/ncclscope-sim-rank" : opt.rank_program;
  const std::string probe =
      opt.probe_path.empty() ? exe_dir + "/../lib/libncclscope.so" : opt.probe_path;
  if (!checkFile(program, "rank program", "build target ncclscope_sim_rank", err)) {
    return kSimSetupError;
  }
  if (opt.probe &&
      !checkFile(probe, "probe library", "build target ncclscope, or use --no-probe", err)) {
    return kSimSetupError;
  }

  JobEnv job;
  job.tag = newJobTag();
  job.job_id = simJobId(job.tag, std::getenv("NCCLSCOPE_JOB_ID"));
  job.trace_dir = opt.trace_dir;
  job.probe = opt.probe ? std::filesystem::absolute(probe).string() : "";
  job.nranks = opt.ranks;
  job.extra = opt.extra_env;
  if (parsed.accel) job.defaults = accelEnvironment(*parsed.accel);
  std::string error;
  if (!makeTraceDir(job.trace_dir, job.tag, error) ||
      (opt.nodes > 0 && !makeNodeDirs(job.trace_dir, job, opt.nodes, job.node_dirs, error)) ||
      !makeRunDir(job.tag, job.run_dir, error)) {
    err << "ncclscope sim: " << error << '\n';
    return kSimSetupError;
  }
  const std::string scenario = std::filesystem::absolute(opt.scenario).string();
  out << fmt::format("ncclscope sim: {} ranks, scenario {}, job {}, trace dir {}{}{}\n", opt.ranks,
                     opt.scenario, job.job_id, job.trace_dir,
                     opt.nodes > 0 ? fmt::format(" ({} nodes)", opt.nodes) : "",
                     opt.probe ? "" : " (no probe)");
  if (parsed.accel) {
    out << "ncclscope sim: " << describeAccelEnvironment(job.defaults, environ) << '\n';
  }
  for (int k = 0; k < opt.nodes; ++k) {
    const int per_node = opt.ranks / opt.nodes;
    out << fmt::format("ncclscope sim: node {}: ranks {}-{}, trace dir {}\n", NodeHost(k),
                       k * per_node, (k + 1) * per_node - 1, job.node_dirs[static_cast<size_t>(k)]);
  }

  std::vector<std::vector<std::string>> argv;
  std::vector<std::vector<std::string>> env;
  for (int r = 0; r < opt.ranks; ++r) {
    argv.push_back({program, scenario, "--rank", std::to_string(r), "--nranks",
                    std::to_string(opt.ranks), "--run-dir", job.run_dir});
    env.push_back(rankEnvironment(job, r, environ));
  }
  std::vector<int> late;
  std::vector<RankOutcome> outcomes;
  bool started = false;
  {
    RankProcesses procs(out, err);  // its destructor kills ranks left over by a failed start
    started = procs.start(argv, env, error);
    if (started) late = procs.wait(opt.timeout_s, opt.fail_fast);
    outcomes = procs.outcomes();
  }
  removeShm(job.tag);
  std::error_code ignored;
  std::filesystem::remove_all(job.run_dir, ignored);
  if (!started) {
    err << "ncclscope sim: " << error << '\n';
    return kSimSetupError;
  }
  return report(outcomes, late, opt.timeout_s, out, err);
}

}  // namespace ncclscope::sim
