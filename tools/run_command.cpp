// `ncclscope run [--dir D] [--exporter[=PORT]] [--subreaper] [--] CMD ARGS...`: runs any command
// with the probe preloaded and, with --exporter (or NCCLSCOPE_EXPORTER), this node's metrics
// exporter next to it; passes signals on to the command (run_supervisor.h).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/commands.h"
#include "tools/run_supervisor.h"
#include "trace/job_layout.h"
#include "trace/trace_dir.h"

namespace ncclscope::tools {
namespace {

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

const char* Getenv(const char* name) {
  return getenv(name);
}

std::string NonEmptyEnv(const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? v : "";
}

// Where one launch's traces go. An exact directory (--dir, NCCLSCOPE_DIR) is used as given.
// Otherwise <base>/<job>/<host>: every task of one launch (`srun -n 64 ncclscope run -- ...`, each
// task started in its own second) names the same job from its launcher, so they agree on the
// directory without talking to each other; only a launch with no job id (one interactive task)
// is named by its start time.
struct TraceLayout {
  std::string dir;   // this node's directory, for the exporter and the closing line
  std::string base;  // empty for an exact directory
  std::string job;
  std::string host;
};

TraceLayout ChooseLayout(const std::string& dir_option) {
  TraceLayout l;
  std::string exact = !dir_option.empty() ? dir_option : NonEmptyEnv("NCCLSCOPE_DIR");
  if (!exact.empty()) {
    l.dir = Absolute(exact);
    return l;
  }
  std::string job = NonEmptyEnv("NCCLSCOPE_JOB_ID");
  if (job.empty()) job = trace::LauncherJobId(Getenv);
  if (job.empty()) {
    char stamp[32];
    time_t now = time(nullptr);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
    job = stamp;
  }
  l.job = trace::SafePathComponent(job, "local");
  const std::string base = NonEmptyEnv("NCCLSCOPE_BASE_DIR");
  l.base = Absolute(base.empty() ? "ncclscope" : base);
  l.host = trace::ThisHostName(Getenv);
  l.dir = trace::JobHostDir(l.base, l.job, l.host);
  return l;
}

// The probe goes first so its nccl* definitions win over the job's libnccl; an existing
// LD_PRELOAD (a memory allocator, say) is kept after it.
std::string PreloadValue(const std::string& probe) {
  const char* existing = getenv("LD_PRELOAD");
  if (existing == nullptr || *existing == '\0') return probe;
  return probe + ":" + existing;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The node's exporter: one per node, so only the launcher of local rank 0 starts it when `run`
// wraps each rank (srun ncclscope run -- python train.py); a launcher per node (torchrun, mpirun)
// has no local rank and starts it.
bool OwnsNodeExporter() {
  for (const char* var : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* value = getenv(var);
    if (value != nullptr && *value != '\0') return std::strcmp(value, "0") == 0;
  }
  return true;
}

// "PORT" listens on every address (the node's Prometheus scrapes it from elsewhere); "ADDR:PORT"
// as given.
std::string ListenAddress(const std::string& exporter) {
  return exporter.find(':') == std::string::npos ? "0.0.0.0:" + exporter : exporter;
}

// `ncclscope exporter` as a child of this launcher; -1 when it could not be started (the job runs
// anyway: metrics are never worth a failed job).
pid_t StartExporter(const std::string& dir, const std::string& job, const std::string& listen,
                    const JobSupervisor& supervisor) {
  const std::string self = ExecutableDir() + "/ncclscope";
  pid_t pid = fork();
  if (pid == 0) {
    // SIGTERM must reach it (StopExporter).
    supervisor.RestoreInChild();
    // Not the job's: no probe in the exporter itself.
    unsetenv("LD_PRELOAD");
    // This node's ranks only: the directory may be shared by every node's launcher.
    std::vector<const char*> argv = {self.c_str(), "exporter",     "--dir",           dir.c_str(),
                                     "--listen",   listen.c_str(), "--this-host-only"};
    // The job's own files only, should the directory hold an earlier job's too.
    if (!job.empty()) argv.insert(argv.end(), {"--job", job.c_str()});
    // Under Slurm every node's exporter finds the others from the job's node list, and the one of
    // rank 0's node correlates the whole job (exporters/README.md, "Peers").
    const char* nodelist = getenv("SLURM_JOB_NODELIST");
    if (nodelist != nullptr && *nodelist != '\0')
      argv.insert(argv.end(), {"--peers-from", "slurm"});
    argv.push_back(nullptr);
    execv(self.c_str(), const_cast<char* const*>(argv.data()));
    std::cerr << "ncclscope run: cannot start the exporter: " << strerror(errno) << "\n";
    _exit(127);
  }
  if (pid < 0) perror("ncclscope run: fork (exporter)");
  return pid;
}

void StopExporter(pid_t exporter) {
  if (exporter <= 0) return;
  kill(exporter, SIGTERM);
  while (waitpid(exporter, nullptr, 0) < 0 && errno == EINTR) {
  }
}

struct RunOptions {
  std::string dir;
  std::string exporter;
  bool subreaper = false;
};

int Run(const RunOptions& options, const std::vector<std::string>& command) {
  if (command.empty()) {
    std::cerr << "ncclscope run: no command given (usage: ncclscope run [--dir D] "
                 "[--exporter[=PORT]] [--subreaper] -- CMD ARGS...)\n";
    return 3;
  }
  const std::string probe = ExecutableDir() + "/../lib/libncclscope.so";
  if (access(probe.c_str(), R_OK) != 0) {
    std::cerr << "ncclscope run: probe library not found at " << probe
              << " (build the ncclscope_probe target)\n";
    return 3;
  }
  const TraceLayout layout = ChooseLayout(options.dir);
  const std::string& dir = layout.dir;
  std::string error;
  std::string made;  // equals dir
  const bool ok = layout.base.empty()
                      ? trace::EnsurePrivateDir(dir, &error)
                      : trace::EnsurePrivateSubdirs(layout.base, false, {layout.job, layout.host},
                                                    &made, &error);
  if (!ok) {
    std::cerr << "ncclscope run: " << error << "\n";
    return 3;
  }
  if (layout.base.empty()) {
    setenv("NCCLSCOPE_DIR", dir.c_str(), 1);
  } else {
    // Base and job, not this node's directory: a launcher started here (`ncclscope run -- srun
    // ...`) may put ranks on other nodes, and each must write under its own host name.
    setenv("NCCLSCOPE_BASE_DIR", layout.base.c_str(), 1);
    setenv("NCCLSCOPE_JOB_ID", layout.job.c_str(), 1);
  }
  const char* exporter_env = getenv("NCCLSCOPE_EXPORTER");
  const std::string exporter = !options.exporter.empty() ? options.exporter
                               : exporter_env != nullptr ? exporter_env
                                                         : "";
  // From here on a signal meant for the job waits for it instead of ending this process.
  const JobSupervisor supervisor(options.subreaper);
  pid_t exporter_pid = !exporter.empty() && OwnsNodeExporter()
                           ? StartExporter(dir, layout.job, ListenAddress(exporter), supervisor)
                           : -1;
  setenv("LD_PRELOAD", PreloadValue(probe).c_str(), 1);
  // The probe is NCCL's profiler plugin too (device start events); a user's choice is kept.
  setenv("NCCL_PROFILER_PLUGIN", probe.c_str(), 0);
  // The probe is the NVTX injection too (which step and phase each call belongs to). A tool the
  // job already injects (Nsight Systems) keeps working: the probe forwards every NVTX call to it.
  const char* nvtx_tool = getenv("NVTX_INJECTION64_PATH");
  if (nvtx_tool != nullptr && nvtx_tool[0] != '\0' && probe != nvtx_tool) {
    setenv("NCCLSCOPE_NVTX_FORWARD", nvtx_tool, 0);
  }
  setenv("NVTX_INJECTION64_PATH", probe.c_str(), 1);

  pid_t child = fork();
  if (child < 0) {
    perror("ncclscope run: fork");
    StopExporter(exporter_pid);
    return 3;
  }
  if (child == 0) {
    supervisor.RestoreInChild();
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "ncclscope run: cannot run '" << command[0] << "': " << strerror(errno) << "\n";
    _exit(127);
  }
  const int status = supervisor.Wait(child, &exporter_pid);
  // The job's ranks have ended: their last state was on /metrics while they ran, and the trace
  // stays in the directory for `ncclscope analyze`.
  StopExporter(exporter_pid);
  std::cerr << "ncclscope: trace in " << dir << " (ncclscope dump " << dir << ")\n";
  return ExitCodeOf(status);
}

}  // namespace

std::string ExecutableDir() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  std::string exe(path);
  return exe.substr(0, exe.rfind('/'));
}

void RegisterRunCommand(CLI::App& app, const std::vector<std::string>& after_double_dash,
                        int* exit_code) {
  auto* cmd =
      app.add_subcommand("run", "Run a command with the probe preloaded (like nsys profile)");
  auto options = std::make_shared<RunOptions>();
  cmd->add_option("--dir", options->dir,
                  "Exact trace directory (default: $NCCLSCOPE_DIR, else "
                  "<base>/<job>/<host>: base $NCCLSCOPE_BASE_DIR or ./ncclscope, job from the "
                  "launcher (NCCLSCOPE_JOB_ID, SLURM job.step, torchelastic run id) or the start "
                  "time)");
  cmd->add_flag("--exporter{9478}", options->exporter,
                "Also serve this node's metrics while the job runs (ncclscope exporter): "
                "--exporter listens on 0.0.0.0:9478, --exporter=PORT or =ADDR:PORT elsewhere "
                "(default: $NCCLSCOPE_EXPORTER, empty: none)");
  cmd->add_flag("--subreaper", options->subreaper,
                "Reap every orphaned process the command leaves, as PID 1 does (which ncclscope "
                "run does by itself when it is PID 1, a container's entry point)");
  // Everything from the first word that is not ours belongs to the command, even words that look
  // like our options.
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->footer(
      "Usage: ncclscope run [--dir D] [--exporter[=PORT]] [--subreaper] [--] CMD ARGS...\n"
      "SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 are passed on to the command, and SIGINT and SIGQUIT "
      "unless the terminal sent them to the command as well; the exit code is the command's "
      "(128 + signal when it was killed).");
  cmd->callback([=] {
    std::vector<std::string> command = cmd->remaining();
    command.insert(command.end(), after_double_dash.begin(), after_double_dash.end());
    *exit_code = Run(*options, command);
  });
}

}  // namespace ncclscope::tools
