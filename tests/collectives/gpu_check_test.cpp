// ncclscope-gpu-check (collectives/gpu_check/, docs/collectives.md "On a real GPU") run as a user
// runs it, on the emulated CUDA driver: its kernels' launches run the host twins it exports, so
// what is tested here is the check itself (every rank count's cases, bitwise comparison, the
// absent-rank check, the IPC processes, the summary table, the exit status), ready for the GPU. The
// exchange kernel's launches run the exchange twin the check exports as libncclscope.so does
// (ncclscope_exchange_host: collectives/gpu_check/host_twins.cpp, plugin/accel_host_twins.cpp).
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/subprocess.h"

namespace {

using ncclscope::testing::ProcessResult;
using ncclscope::testing::RunProcess;

// Small sizes and few runs: the emulator's kernels are CPU threads on a CI machine's cores. The
// sizes still reach the one-shot/two-shot edge of the 5-8 rank rows (256 KiB), and 20 calls per
// rank count wrap the epoch counter. The exchange's groups keep their own sizes (parts of up to 4
// chunks of 256 KiB, a few MiB a rank).
ProcessResult RunCheck(const std::string& tag, std::vector<std::string> extra) {
  std::vector<std::string> argv = {NCCLSCOPE_GPU_CHECK,
                                   "--reps",
                                   "2",
                                   "--max-bytes",
                                   "300k",
                                   "--force-other-max",
                                   "16k",
                                   "--ipc-reps",
                                   "2",
                                   "--ipc-max-bytes",
                                   "8k",
                                   "--copy-bytes",
                                   "1M",
                                   "--wrap-after",
                                   "20"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunProcess(argv, {{"LD_LIBRARY_PATH", NCCLSCOPE_SIM_LIB_DIR}, {"NCCLSIM_JOB_TAG", tag}},
                    120);
}

int CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(GpuCheck, PassesOnTheEmulatedDriverAndPrintsItsSummaryTable) {
  // The exchange's absent-rank group has only pairs with the absent rank, so a short bound cannot
  // name another rank however loaded the machine is.
  const ProcessResult r =
      RunCheck("gpuchkok", {"--ranks", "2-8", "--ipc-ranks", "2,8", "--stall-timeout-ms", "1000",
                            "--exchange-stall-timeout-ms", "100"});
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string& out = r.out;
  EXPECT_NE(out.find("==== ncclscope-gpu-check summary ===="), std::string::npos) << out;
  EXPECT_NE(out.find("hbm ceiling: device-to-device copy"), std::string::npos) << out;
  EXPECT_NE(out.find("\nranks kernel "), std::string::npos) << out;
  EXPECT_NE(out.find("RESULT: PASS"), std::string::npos) << out;
  for (int n = 2; n <= 8; ++n) {
    const std::string ranks = std::to_string(n);
    // Every rank count has table rows for both AllReduce algorithms and AlltoAll, none wrong.
    EXPECT_GE(CountMatches(out, " " + ranks + " allreduce one-shot bf16 .* 0 +[0-9.]+ +[0-9.]+"), 1)
        << ranks;
    EXPECT_GE(CountMatches(out, " " + ranks + " allreduce two-shot fp16 "), 1) << ranks;
    EXPECT_GE(CountMatches(out, " " + ranks + " alltoall pull "), 2) << ranks;
    EXPECT_NE(out.find("(a) " + ranks + " ranks: "), std::string::npos) << ranks;
    // The exchange: every group ran right with the planner's launch, every pair's chunk counter
    // wrapped, parts placed off 16-byte boundaries took the kernel's byte path, and a rank that
    // never launched was named by every other rank's kernel.
    for (const char* group : {"pipeline", "a2av 1 chunk", "a2av chunks"}) {
      EXPECT_EQ(CountMatches(out, " " + ranks + " exchange " + group +
                                      " +table +[0-9]+ +4x512 +[23] +0 +[0-9.]+ +[0-9.]+"),
                1)
          << ranks << " " << group << "\n"
          << out;
    }
    EXPECT_EQ(CountMatches(out, "\\(a\\) " + ranks +
                                    " ranks, exchange: 3 groups, [0-9]+ launches, chunk counters "
                                    "from 0xfffffffe: ([0-9]+) of \\1 pairs wrapped, [0-9]+ "
                                    "parts \\([1-9][0-9]* not 16-byte aligned\\)"),
              1)
        << out;
    EXPECT_NE(out.find("(a) " + ranks + " ranks, rank " + std::to_string(n - 1) +
                       " never launched its exchange: all " + std::to_string(n - 1) +
                       " others returned and named it"),
              std::string::npos)
        << out;
    // The absent-rank check: every other rank's kernel returned and named the last rank.
    EXPECT_NE(
        out.find("(a) " + ranks + " ranks, rank " + std::to_string(n - 1) +
                 " never launched: all " + std::to_string(n - 1) + " others returned and named it"),
        std::string::npos)
        << out;
  }
  // The table's planned two-shot edge for 5-8 ranks (256 KiB) was reached.
  EXPECT_GE(CountMatches(out, " 8 allreduce two-shot bf16 +table +262144 "), 1) << out;
  EXPECT_EQ(CountMatches(out, "did not wrap"), 0) << out;
  EXPECT_EQ(CountMatches(out, "WRONG|HANG"), 0) << out;
  EXPECT_NE(out.find("(b) 2 processes over CUDA IPC: 28 calls each, 0 wrong"), std::string::npos)
      << out;
  EXPECT_NE(out.find("(b) 8 processes over CUDA IPC: "), std::string::npos) << out;
  EXPECT_EQ(CountMatches(out, "FAILED"), 0) << out;
}

TEST(GpuCheck, FailsWhenAnOutputByteIsWrong) {
  const ProcessResult r = RunCheck("gpuchkbad", {"--ranks", "3", "--ipc-ranks", "none",
                                                 "--stall-timeout-ms", "0", "--self-test-corrupt"});
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The flipped byte is found by the comparison, with where it is and both values.
  EXPECT_EQ(CountMatches(r.out,
                         "WRONG 3 ranks, allreduce one-shot fp32, 16 bytes, run 0 .*: "
                         "rank 0: byte 8 \\(element 2\\) is 0x[0-9a-f]{2}, the CPU "
                         "twin's 0x[0-9a-f]{2}"),
            1)
      << r.out;
  // The exchange's comparison finds the byte flipped in its first group, naming the part and its
  // sender.
  EXPECT_EQ(CountMatches(r.out,
                         "WRONG 3 ranks, exchange pipeline, [0-9]+ bytes, run 0 .*: rank 1: byte "
                         "[0-9]+ of its recvbuff \\(byte 1 of the [0-9]+-byte part from rank 0, at "
                         "offset [0-9]+\\) is 0x[0-9a-f]{2}, rank 0 sent 0x[0-9a-f]{2}"),
            1)
      << r.out;
  EXPECT_NE(r.out.find("2 wrong, bitwise against the CPU twins"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RESULT: FAIL"), std::string::npos) << r.out;
}

TEST(GpuCheck, RefusesAnUnknownOption) {
  const ProcessResult r = RunProcess({NCCLSCOPE_GPU_CHECK, "--ranks", "9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad value for --ranks: 9"), std::string::npos) << r.err;
}

}  // namespace
