// `ncclscope run -- CMD`: a wrapper must be invisible to the job it wraps (exit code, existing
// preloads) while pointing it at the probe and the trace directory.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

ProcessResult RunWrapped(const std::string& dir, const std::string& shell_command,
                         const std::map<std::string, std::string>& env = {}) {
  return RunProcess({Cli(), "run", "--dir", dir, "--", "sh", "-c", shell_command}, env, 30);
}

// A library that is surely loadable and harmless to preload: the C library itself.
std::string LibcPath() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&getpid), &info);
  return info.dli_fname != nullptr ? info.dli_fname : "";
}

TEST(RunCommand, PassesTheExitCodeThrough) {
  ScratchDir scratch;
  EXPECT_EQ(RunWrapped(scratch / "trace", "exit 0").exit_code, 0);
  EXPECT_EQ(RunWrapped(scratch / "trace", "exit 42").exit_code, 42);
  // Killed by a signal: 128 + signal, as a shell reports it.
  EXPECT_EQ(RunWrapped(scratch / "trace", "kill -TERM $$").exit_code, 128 + 15);
}

TEST(RunCommand, SetsTraceDirAndPreloadsTheProbe) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult p =
      RunWrapped(dir, "echo \"dir=$NCCLSCOPE_DIR\"; echo \"preload=$LD_PRELOAD\"", {});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("dir=" + dir + "\n"), std::string::npos) << p.out;
  const size_t at = p.out.find("preload=");
  ASSERT_NE(at, std::string::npos) << p.out;
  const std::string preload = p.out.substr(at + 8, p.out.find('\n', at) - at - 8);
  EXPECT_NE(preload.find("libncclscope.so"), std::string::npos) << preload;
  EXPECT_EQ(access(preload.c_str(), R_OK), 0) << "the preloaded path exists: " << preload;
}

TEST(RunCommand, MakesTheProbeNcclsProfilerPluginUnlessOneIsChosen) {
  ScratchDir scratch;
  const std::string echo = "echo \"plugin=$NCCL_PROFILER_PLUGIN;preload=$LD_PRELOAD\"";
  const ProcessResult p = RunWrapped(scratch / "trace", echo, {});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const size_t at = p.out.find("plugin=");
  ASSERT_NE(at, std::string::npos) << p.out;
  const std::string plugin = p.out.substr(at + 7, p.out.find(';', at) - at - 7);
  EXPECT_NE(plugin.find("libncclscope.so"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("preload=" + plugin + "\n"), std::string::npos) << "the same file";
  const ProcessResult q = RunWrapped(scratch / "trace", echo, {{"NCCL_PROFILER_PLUGIN", "none"}});
  EXPECT_NE(q.out.find("plugin=none;"), std::string::npos) << q.out;
}

TEST(RunCommand, KeepsAnExistingPreload) {
  ScratchDir scratch;
  const std::string libc = LibcPath();
  ASSERT_FALSE(libc.empty());
  const ProcessResult p =
      RunWrapped(scratch / "trace", "echo \"preload=$LD_PRELOAD\"", {{"LD_PRELOAD", libc}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  // The probe goes first so its nccl* symbols win; the job's own preload follows, unchanged.
  EXPECT_NE(p.out.find("libncclscope.so:" + libc + "\n"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace ncclscope::testing
