// ncclscope-gpu-check (collectives/gpu_check/, docs/collectives.md "On a real GPU") run as a user
// runs it, on the emulated CUDA driver: its kernels' launches run the host twins it exports, so
// what is tested here is the check itself (every rank count's cases, bitwise comparison, the
// absent-rank check, the IPC processes, the summary table, the exit status), ready for the GPU. The
// exchange kernel's launches run the exchange twin the check exports as libncclscope.so does
// (ncclscope_exchange_host: collectives/gpu_check/host_twins.cpp,
// plugin/accel/accel_host_twins.cpp); the MoE kernels' run the C API's CPU twins, exported as
// libncclscope_moe.so does (ncclscope_moe_dispatch_host, collectives/moe/moe_host_twins.h).
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
  // About 15 s on an idle 2-core machine, but the emulated ranks' barriers spin on threads of one
  // process: beside two busy loops the same run took 121-125 s, so the bound leaves
  // room for a loaded CI machine. It bounds a hang, not the check's speed.
  return RunProcess(argv, {{"LD_LIBRARY_PATH", NCCLSCOPE_SIM_LIB_DIR}, {"NCCLSIM_JOB_TAG", tag}},
                    400);
}

int CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(GpuCheck, PassesOnTheEmulatedDriverAndPrintsItsSummaryTable) {
  // The exchange's absent-rank group has only pairs with the absent rank, so a short bound cannot
  // name another rank however loaded the machine is.
  // The MoE cases run for three rank counts (two, an odd one, all eight): each costs the
  // absent-rank check's second of waiting.
  const ProcessResult r =
      RunCheck("gpuchkok", {"--ranks", "2-8", "--ipc-ranks", "2,8", "--stall-timeout-ms", "1000",
                            "--exchange-stall-timeout-ms", "100", "--moe-ranks", "2,3,8"});
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
  // MoE dispatch and combine: every shape within 300 KiB of token rows a rank, each type, both
  // runs right, with the plan's grid; every case's epochs wrapped; an absent rank named by every
  // other rank's timed-out dispatch. The rank counts left out have no MoE rows.
  for (int n : {2, 3, 8}) {
    const std::string ranks = std::to_string(n);
    for (const char* call : {"dispatch", "combine"}) {
      for (const char* dtype : {"fp32", "fp16", "bf16"}) {
        for (const char* shape : {"h128 k1 t48", "h128 k8 t64 skew", "h128 k8 t64 skew sums"}) {
          EXPECT_EQ(CountMatches(out, " " + ranks + " moe " + call + " " + dtype + " " + shape +
                                          " +plan +[1-9][0-9]* +32x512 +2 +0 +[0-9.]+ +[0-9.]+"),
                    1)
              << ranks << " " << call << " " << dtype << " " << shape << "\n"
              << out;
        }
      }
      // hidden 7168 with 16 tokens: 224 KiB a rank in 16-bit types, 448 KiB (left out) in fp32.
      for (const char* dtype : {"fp16", "bf16"}) {
        EXPECT_EQ(CountMatches(out, " " + ranks + " moe " + call + " " + dtype +
                                        " h7168 k8 t16 +plan +[1-9][0-9]* +32x512 +2 +0 "),
                  1)
            << ranks << " " << call << " " << dtype << "\n"
            << out;
      }
    }
    EXPECT_EQ(CountMatches(out, "\\(a\\) " + ranks +
                                    " ranks, moe: 11 cases, 44 calls, each case's epochs wrapping"),
              1)
        << out;
    EXPECT_NE(out.find("(a) " + ranks + " ranks, rank " + std::to_string(n - 1) +
                       " never launched its moe dispatch: all " + std::to_string(n - 1) +
                       " others returned a timeout and named it"),
              std::string::npos)
        << out;
    // Dispatch and combine captured into graphs with device epochs, replayed across the wrap.
    EXPECT_NE(out.find("(a) " + ranks +
                       " ranks, moe under CUDA graphs: moe dispatch fp32 h128 k1 t48, dispatch and "
                       "combine captured once a rank, 4 replays with fresh inputs, epochs from the "
                       "buffers across the wrap: all right"),
              std::string::npos)
        << out;
  }
  for (int n : {4, 5, 6, 7}) {
    EXPECT_EQ(CountMatches(out, " " + std::to_string(n) + " moe "), 0) << n << "\n" << out;
  }
  EXPECT_NE(out.find("(c) moe rows: bytes = the logical bytes a rank receives as DeepEP counts"),
            std::string::npos)
      << out;
  // The table's planned two-shot edge for 5-8 ranks (256 KiB) was reached.
  EXPECT_GE(CountMatches(out, " 8 allreduce two-shot bf16 +table +262144 "), 1) << out;
  EXPECT_EQ(CountMatches(out, "did not wrap"), 0) << out;
  EXPECT_EQ(CountMatches(out, "WRONG|HANG"), 0) << out;
  // (b): the AllReduce and all-to-all cases up to 8 KiB, and the MoE kernels over buffers each
  // process registered for the others (9 cases x 2 runs x dispatch and combine).
  EXPECT_NE(out.find("(b) 2 processes over CUDA IPC: 28 calls each and 36 MoE calls, 0 wrong"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("(b) 8 processes over CUDA IPC: "), std::string::npos) << out;
  EXPECT_EQ(CountMatches(out,
                         "\\(b\\) 8 processes over CUDA IPC: [0-9]+ calls each and 36 MoE "
                         "calls, 0 wrong"),
            2)  // as it happens and in the summary
      << out;
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
  // The MoE comparison finds the byte flipped in the first dispatch's recv_x, naming the row's
  // source.
  EXPECT_EQ(
      CountMatches(r.out,
                   "WRONG 3 ranks, moe dispatch fp32 h128 k1 t48, run 0 \\(epoch 0xfffffffe\\): "
                   "rank [0-2]: recv_x byte 256 \\(row 0, element 64: rank [0-2]'s token "
                   "[0-9]+, slot 0\\) is 0x[0-9a-f]{2}, the CPU twin's 0x[0-9a-f]{2}"),
      1)
      << r.out;
  EXPECT_NE(r.out.find("3 wrong, bitwise against the CPU twins"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RESULT: FAIL"), std::string::npos) << r.out;
}

// The MoE low-latency shape (128 tokens a rank, hidden 7168, top-8 of 256 experts, bf16) runs
// when its 1.75 MiB of token rows fit --max-bytes, and its times are put beside the targets.
TEST(GpuCheck, PutsTheMoeLowLatencyShapeBesideItsTargets) {
  const ProcessResult r = RunCheck("gpuchkll", {"--ranks", "2", "--ipc-ranks", "none",
                                                "--stall-timeout-ms", "0", "--max-bytes", "2M"});
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* call : {"dispatch", "combine"}) {
    for (const char* mode : {"", " sums"}) {
      EXPECT_EQ(CountMatches(r.out, std::string(" 2 moe ") + call + " bf16 h7168 k8 t128" + mode +
                                        " +plan +[1-9][0-9]* +32x512 +2 +0 "),
                1)
          << r.out;
    }
  }
  EXPECT_EQ(CountMatches(r.out,
                         "\\(c\\) moe, 2 ranks, 128 tokens a rank, hidden 7168, top-8, bf16 "
                         "\\(low-latency shape\\): dispatch [0-9.]+ us \\(target <= 60\\), "
                         "combine [0-9.]+ us, with rank sums [0-9.]+ us \\(target <= 80\\)"),
            1)
      << r.out;
  // The high-throughput shape (56 MiB a rank) is left out.
  EXPECT_EQ(CountMatches(r.out, "t4096"), 0) << r.out;
}

// --moe off leaves the MoE kernels out of the IPC processes too.
TEST(GpuCheck, MoeOffLeavesTheIpcProcessesToTheOtherKernels) {
  const ProcessResult r =
      RunCheck("gpuchkipc", {"--ranks", "2", "--ipc-ranks", "2", "--moe", "off",
                             "--stall-timeout-ms", "0", "--exchange-stall-timeout-ms", "0"});
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(CountMatches(r.out, "\\(b\\) 2 processes over CUDA IPC: 28 calls each, 0 wrong\n"), 2)
      << r.out;
  EXPECT_EQ(CountMatches(r.out, "MoE|moe dispatch"), 0) << r.out;
}

TEST(GpuCheck, RefusesAnUnknownOption) {
  const ProcessResult r = RunProcess({NCCLSCOPE_GPU_CHECK, "--ranks", "9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad value for --ranks: 9"), std::string::npos) << r.err;
}

}  // namespace
