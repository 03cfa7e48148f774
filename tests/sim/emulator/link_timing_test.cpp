// Transfer-time model: a slowed rank makes its peers' operations slower while its own calls still
// return at once; bad env values fall back to defaults with one warning naming the variable.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim/emulator/ncclsim_control.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

using Clock = std::chrono::steady_clock;

// Mean wall time of `iters` small AllReduces, measured with events as a profiler would.
double meanOpMs(SimJob& job, int iters) {
  CUevent a, b;
  cuEventCreate(&a, 0);
  cuEventCreate(&b, 0);
  std::vector<float> buf(16, 1.0f);
  cuEventRecord(a, job.stream);
  for (int i = 0; i < iters; ++i) {
    ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, job.comm,
                  job.cstream());
  }
  cuEventRecord(b, job.stream);
  cuEventSynchronize(b);
  float ms = 0;
  cuEventElapsedTime(&ms, a, b);
  return ms / iters;
}

TEST(LinkModel, SlowRankDelaysItsPeer) {
  auto out = runRanks(
      2,
      [](int rank, int n, const ncclUniqueId& id) {
        setenv("NCCLSIM_LATENCY_US", "2000", 1);
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        double base = meanOpMs(job, 5);
        RANK_CHECK(rank, base >= 1.9);
        if (rank == 1) ncclsimSetLinkSlowdown(8.0);
        std::vector<float> buf(16, 1.0f);
        auto t0 = Clock::now();
        ncclAllReduce(buf.data(), buf.data(), 16, ncclFloat32, ncclSum, job.comm, job.cstream());
        auto call_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        RANK_CHECK(rank, call_ms < 5.0);  // the host call never waits for the model
        cuStreamSynchronize(job.stream);
        double slow = meanOpMs(job, 5);
        // The model's floor, 8 x 2 ms less some slack: load can only add to it. (A ratio to the
        // base measured a moment before failed at load 16, the base itself taking 14 ms.)
        if (slow < 12.0) {
          rankReport("rank %d AllReduce float32: base %.2f ms, with slow rank 1 %.2f ms", rank,
                     base, slow);
          return 1;
        }
        return 0;
      },
      20000);
  std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

TEST(LinkModel, BadEnvValueWarnsOnceAndUsesDefault) {
  auto out = runRanks(
      1,
      [](int rank, int n, const ncclUniqueId& id) {
        setenv("NCCLSIM_LINK_SLOWDOWN", "fast", 1);
        char path[] = "/tmp/ncclsim_stderr_XXXXXX";
        int fd = mkstemp(path);
        dup2(fd, 2);
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        double ms = meanOpMs(job, 3);
        fflush(stderr);
        FILE* f = fopen(path, "r");
        char text[512] = {};
        size_t len = fread(text, 1, sizeof(text) - 1, f);
        text[len] = '\0';
        fclose(f);
        unlink(path);
        RANK_CHECK(rank, std::strstr(text, "NCCLSIM_LINK_SLOWDOWN") != nullptr);
        RANK_CHECK(rank, ms < 5.0);  // default 1.0, not some parsed garbage
        return 0;
      },
      20000);
  std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
}  // namespace ncclsim_test
