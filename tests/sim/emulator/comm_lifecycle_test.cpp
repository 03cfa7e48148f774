// Communicator creation and queries: split by color and key, NOCOLOR, shrink, async completion.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

TEST(CommLifecycle, SplitOrdersByKeyAndNoColorGetsNull) {
  expectAllPass(runRanks(
      6,
      [](int rank, int n, const ncclUniqueId& id) {
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        int color = rank == 5 ? NCCL_SPLIT_NOCOLOR : rank % 2;
        ncclComm_t sub = nullptr;
        RANK_CHECK(rank, ncclCommSplit(job.comm, color, -rank, &sub, nullptr) == ncclSuccess);
        if (color == NCCL_SPLIT_NOCOLOR) {
          RANK_CHECK(rank, sub == nullptr);
          return 0;
        }
        // Color 0 = {0, 2, 4}, color 1 = {1, 3}; key -rank puts the highest parent rank first.
        std::vector<int> members = color == 0 ? std::vector<int>{4, 2, 0} : std::vector<int>{3, 1};
        int count = 0, me = -1;
        RANK_CHECK(rank, ncclCommCount(sub, &count) == ncclSuccess);
        RANK_CHECK(rank, ncclCommUserRank(sub, &me) == ncclSuccess);
        RANK_CHECK(rank, count == int(members.size()));
        RANK_CHECK(rank, members[size_t(me)] == rank);
        int32_t v = rank, sum = -1;
        ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, sub, job.cstream());
        std::vector<int32_t> ranks(members.size(), -1);
        ncclAllGather(&v, ranks.data(), 1, ncclInt32, sub, job.cstream());
        RANK_CHECK(rank, syncJob(job, 5000));
        RANK_CHECK(rank, sum == (color == 0 ? 6 : 4));
        for (size_t i = 0; i < members.size(); ++i) RANK_CHECK(rank, ranks[i] == members[i]);
        RANK_CHECK(rank, ncclCommDestroy(sub) == ncclSuccess);
        RANK_CHECK(rank, ncclCommDestroy(job.comm) == ncclSuccess);
        return 0;
      },
      20000));
}

TEST(CommLifecycle, ShrinkWithoutAnExcludedRank) {
  expectAllPass(runRanks(
      4,
      [](int rank, int n, const ncclUniqueId& id) {
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        if (rank == 2) return 0;  // "died": never calls shrink
        int excluded[] = {2};
        ncclComm_t small = nullptr;
        RANK_CHECK(rank, ncclCommShrink(job.comm, excluded, 1, &small, nullptr,
                                        NCCL_SHRINK_DEFAULT) == ncclSuccess);
        int count = 0, me = -1;
        ncclCommCount(small, &count);
        ncclCommUserRank(small, &me);
        RANK_CHECK(rank, count == 3 && me == (rank < 2 ? rank : rank - 1));
        int32_t one = 1, total = 0;
        ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, small, job.cstream());
        RANK_CHECK(rank, syncJob(job, 5000));
        RANK_CHECK(rank, total == 3);
        return 0;
      },
      20000));
}

TEST(CommLifecycle, CallsReturnBeforeCompletionAndEventsFollowTheStream) {
  expectAllPass(runRanks(
      2,
      [](int rank, int n, const ncclUniqueId& id) {
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        static std::atomic<bool> open{false};
        if (rank == 0) {
          cuLaunchHostFunc(
              job.stream,
              [](void*) {
                while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
              },
              nullptr);
        }
        CUevent before, after;
        cuEventCreate(&before, 0);
        cuEventCreate(&after, 0);
        std::vector<double> buf(1000, 1.0);
        cuEventRecord(before, job.stream);
        ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat64, ncclSum, job.comm,
                      job.cstream());
        cuEventRecord(after, job.stream);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        RANK_CHECK(rank, cuEventQuery(after) == CUDA_ERROR_NOT_READY);  // rank 0 holds it back
        RANK_CHECK(rank, buf[0] == 1.0);
        ncclResult_t err;
        RANK_CHECK(rank,
                   ncclCommGetAsyncError(job.comm, &err) == ncclSuccess && err == ncclSuccess);
        // Rank 0 lets its stream go only once rank 1 has looked: on a loaded machine the two
        // processes start far enough apart that rank 1 could otherwise look after the release.
        uint64_t h = 1469598103934665603ULL;  // FNV-1a of the whole id: unique per job
        for (const char c : id.internal) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
        char gate[64];
        std::snprintf(gate, sizeof gate, "/tmp/ncclscope-lifecycle-%016llx.gate",
                      static_cast<unsigned long long>(h));
        if (rank == 1) {
          if (FILE* f = std::fopen(gate, "w")) std::fclose(f);
        }
        if (rank == 0) {
          for (int i = 0; i < 20000 && access(gate, F_OK) != 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          unlink(gate);
          open = true;
        }
        RANK_CHECK(rank, cuEventSynchronize(after) == CUDA_SUCCESS);
        RANK_CHECK(rank, cuEventQuery(after) == CUDA_SUCCESS);
        RANK_CHECK(rank, buf[0] == 2.0 && buf[999] == 2.0);
        RANK_CHECK(rank, ncclCommFinalize(job.comm) == ncclSuccess);
        RANK_CHECK(rank, ncclCommDestroy(job.comm) == ncclSuccess);
        return 0;
      },
      20000));
}

TEST(CommLifecycle, QueriesAndVersion) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  EXPECT_STRNE(ncclGetErrorString(ncclInvalidUsage), ncclGetErrorString(ncclSuccess));
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_STRNE(ncclGetLastError(nullptr), "");
  void* p = nullptr;
  EXPECT_EQ(ncclMemAlloc(&p, 100), ncclSuccess);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
}

}  // namespace
}  // namespace ncclsim_test
