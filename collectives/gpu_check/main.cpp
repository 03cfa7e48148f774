// ncclscope-gpu-check: runs ncclscope's own collective kernels on a real GPU (or, in CI, on the
// emulated driver, where exported host twins compute) and checks them (docs/collectives.md, "On a
// real GPU"). This process never initializes CUDA: part (b) forks its rank processes before any
// cuInit, and parts (a) and (c) run in one more child whose summary comes back over a pipe, so the
// summary is printed last, after (b).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/gpu_check/ipc_ranks.h"
#include "collectives/gpu_check/options.h"
#include "collectives/gpu_check/single_device.h"

namespace gc = ncclscope::gpu_check;

namespace {

// Runs (a) and (c) in a child; *summary gets what it printed after its progress lines.
int RunSingleDeviceChild(const gc::Options& o, std::string* summary) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(fds[0]);
    // Progress to the terminal as it happens; the summary (printed last) to the parent.
    const int code = gc::RunSingleDevice(o, fdopen(fds[1], "w"));
    std::fflush(nullptr);
    _exit(code);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n > 0) summary->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  gc::Options o;
  bool help = false;
  std::string error;
  if (!gc::ParseOptions(argc, argv, &o, &help, &error)) {
    std::fprintf(stderr, "ncclscope-gpu-check: %s\n%s", error.c_str(), gc::kUsage);
    return 2;
  }
  if (help) {
    std::printf("%s", gc::kUsage);
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);  // a rank process that died must not take the check with it
  std::string summary;
  const int single = RunSingleDeviceChild(o, &summary);
  std::vector<std::string> ipc_lines;
  int ipc = 0;
  if (single != 3 && !o.ipc_ranks.empty()) ipc = gc::RunIpcRanks(o, &ipc_lines);
  if (o.ipc_ranks.empty()) ipc_lines.push_back("(b) skipped (--ipc-ranks none)");
  if (summary.empty()) {
    summary = "==== ncclscope-gpu-check summary ====\n(a) one device: did not finish (exit " +
              std::to_string(single) + "), see above\n";
  }
  std::printf("%s", summary.c_str());
  for (const std::string& l : ipc_lines) std::printf("%s\n", l.c_str());
  const int worst = std::max(single, ipc);
  std::printf("RESULT: %s\n", worst == 0 ? "PASS" : worst == 3 ? "FAIL (a kernel hung)" : "FAIL");
  return worst == 0 ? 0 : worst == 3 ? 3 : 1;
}
