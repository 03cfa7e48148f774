// `ncclscope run [--dir D] [--] CMD ARGS...`: runs any command with the probe preloaded.
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
#include "trace/trace_dir.h"

namespace ncclscope::tools {
namespace {

std::string DefaultTraceDir() {
  if (const char* dir = getenv("NCCLSCOPE_DIR"); dir != nullptr && *dir != '\0') return dir;
  char stamp[32];
  time_t now = time(nullptr);
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
  return std::string("ncclscope-") + stamp;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
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

int Run(const std::string& dir_option, const std::vector<std::string>& command) {
  if (command.empty()) {
    std::cerr
        << "ncclscope run: no command given (usage: ncclscope run [--dir D] -- CMD ARGS...)\n";
    return 3;
  }
  const std::string probe = ExecutableDir() + "/../lib/libncclscope.so";
  if (access(probe.c_str(), R_OK) != 0) {
    std::cerr << "ncclscope run: probe library not found at " << probe
              << " (build the ncclscope_probe target)\n";
    return 3;
  }
  const std::string dir = Absolute(dir_option.empty() ? DefaultTraceDir() : dir_option);
  std::string error;
  if (!trace::EnsurePrivateDir(dir, &error)) {
    std::cerr << "ncclscope run: " << error << "\n";
    return 3;
  }
  setenv("NCCLSCOPE_DIR", dir.c_str(), 1);
  setenv("LD_PRELOAD", PreloadValue(probe).c_str(), 1);

  pid_t child = fork();
  if (child < 0) {
    perror("ncclscope run: fork");
    return 3;
  }
  if (child == 0) {
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "ncclscope run: cannot run '" << command[0] << "': " << strerror(errno) << "\n";
    _exit(127);
  }
  // Like a shell, let the job receive Ctrl-C while we wait for it and report where it wrote.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
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
  struct Options {
    std::string dir;
  };
  auto options = std::make_shared<Options>();
  cmd->add_option("--dir", options->dir,
                  "Trace directory (default: $NCCLSCOPE_DIR, else ./ncclscope-<time>)");
  // Everything from the first word that is not ours belongs to the command, even words that look
  // like our options.
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->footer("Usage: ncclscope run [--dir D] [--] CMD ARGS...");
  cmd->callback([=] {
    std::vector<std::string> command = cmd->remaining();
    command.insert(command.end(), after_double_dash.begin(), after_double_dash.end());
    *exit_code = Run(options->dir, command);
  });
}

}  // namespace ncclscope::tools
