// Send/recv semantics and the faults the emulator must reproduce as real hangs: send-first
// deadlock, mismatched collectives, stalled device stream, rank that never joins; and abort.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

using Clock = std::chrono::steady_clock;

long msSince(Clock::time_point t0) {
  return long(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

TEST(PointToPoint, RingInOneGroupCompletesWhateverTheOrder) {
  expectAllPass(runRanks(
      6,
      [](int rank, int n, const ncclUniqueId& id) {
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        const size_t count = 50000;  // several ring chunks
        std::vector<int32_t> out(count), in(count, -1), self_in(7, -1), self_out(7, rank);
        for (size_t i = 0; i < count; ++i) out[i] = int32_t(rank * 1000003 + int(i));
        int next = (rank + 1) % n, prev = (rank + n - 1) % n;
        ncclGroupStart();
        if (rank % 2 == 0) {
          ncclRecv(in.data(), count, ncclInt32, prev, job.comm, job.cstream());
          ncclSend(out.data(), count, ncclInt32, next, job.comm, job.cstream());
        } else {
          ncclSend(out.data(), count, ncclInt32, next, job.comm, job.cstream());
          ncclRecv(in.data(), count, ncclInt32, prev, job.comm, job.cstream());
        }
        ncclSend(self_out.data(), 7, ncclInt32, rank, job.comm, job.cstream());
        ncclRecv(self_in.data(), 7, ncclInt32, rank, job.comm, job.cstream());
        RANK_CHECK(rank, ncclGroupEnd() == ncclSuccess);
        RANK_CHECK(rank, syncJob(job, 10000));
        for (size_t i = 0; i < count; ++i) {
          if (in[i] != int32_t(prev * 1000003 + int(i))) {
            rankReport("rank %d Recv from %d dtype int32 offset %zu: got %d", rank, prev, i, in[i]);
            return 1;
          }
        }
        for (int v : self_in) RANK_CHECK(rank, v == rank);
        return 0;
      },
      20000));
}

TEST(PointToPoint, BothSendingFirstOutsideAGroupDeadlocks) {
  expectAllPass(runRanks(
      2,
      [](int rank, int n, const ncclUniqueId& id) {
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        int32_t out = rank, in = -1;
        int peer = 1 - rank;
        RANK_CHECK(rank,
                   ncclSend(&out, 1, ncclInt32, peer, job.comm, job.cstream()) == ncclSuccess);
        RANK_CHECK(rank, ncclRecv(&in, 1, ncclInt32, peer, job.comm, job.cstream()) == ncclSuccess);
        RANK_CHECK(rank, !syncJob(job, 1000));  // a bounded wait observes the deadlock
        RANK_CHECK(rank, in == -1);
        auto t0 = Clock::now();
        RANK_CHECK(rank, ncclCommAbort(job.comm) == ncclSuccess);
        RANK_CHECK(rank, msSince(t0) < 500);
        ncclResult_t err = ncclSuccess;
        RANK_CHECK(rank, ncclCommGetAsyncError(job.comm, &err) == ncclSuccess);
        RANK_CHECK(rank, err != ncclSuccess && err != ncclInProgress);
        return 0;
      },
      20000));
}

// Each case gives rank 1 a different idea of the same collective; nobody completes, nobody crashes.
TEST(Faults, MismatchedCollectivesHangWithoutCorruptingMemory) {
  for (int variant = 0; variant < 5; ++variant) {
    auto out = runRanks(
        3,
        [variant](int rank, int n, const ncclUniqueId& id) {
          SimJob job;
          if (!startJob(rank, n, id, &job)) return 2;
          std::vector<float> send(4096, 1.0f), recv(size_t{3} * 4096, 0.0f);
          bool odd = rank == 1;
          size_t count = odd && variant == 0 ? 4096 : 1000;
          ncclDataType_t dt = odd && variant == 1 ? ncclInt32 : ncclFloat32;
          ncclRedOp_t op = odd && variant == 2 ? ncclMax : ncclSum;
          if (odd && variant == 3) {
            ncclAllGather(send.data(), recv.data(), count, dt, job.comm, job.cstream());
          } else if (variant == 4) {
            ncclBroadcast(send.data(), recv.data(), count, dt, odd ? 1 : 0, job.comm,
                          job.cstream());
          } else {
            ncclAllReduce(send.data(), recv.data(), count, dt, op, job.comm, job.cstream());
          }
          // With disagreeing roots, rank 2 and root 0 agree with each other: only 0 and 1 must
          // hang.
          bool must_hang = variant != 4 || rank != 2;
          bool completed = syncJob(job, 700);
          RANK_CHECK(rank, !(must_hang && completed));
          for (size_t i = 4096; i < recv.size(); ++i) RANK_CHECK(rank, recv[i] == 0.0f);
          return 0;
        },
        20000);
    std::string failures = describeFailures(out);
    EXPECT_TRUE(failures.empty()) << "variant " << variant << "\n" << failures;
  }
}

TEST(Faults, StalledStreamOnOneRankStallsTheCollectiveEverywhere) {
  expectAllPass(runRanks(
      3,
      [](int rank, int n, const ncclUniqueId& id) {
        SimJob job;
        if (!startJob(rank, n, id, &job)) return 2;
        if (rank == 1) {
          static std::atomic<bool> never{false};
          cuLaunchHostFunc(
              job.stream,
              [](void*) {
                while (!never.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
              },
              nullptr);
        }
        std::vector<int64_t> buf(100, rank);
        CUevent done;
        cuEventCreate(&done, 0);
        auto t0 = Clock::now();
        RANK_CHECK(rank, ncclAllReduce(buf.data(), buf.data(), 100, ncclInt64, ncclSum, job.comm,
                                       job.cstream()) == ncclSuccess);
        RANK_CHECK(rank, msSince(t0) < 200);  // the call only enqueues
        cuEventRecord(done, job.stream);
        RANK_CHECK(rank, !syncJob(job, 800));
        RANK_CHECK(rank, cuEventQuery(done) == CUDA_ERROR_NOT_READY);
        t0 = Clock::now();
        RANK_CHECK(rank, ncclCommAbort(job.comm) == ncclSuccess);
        RANK_CHECK(rank, msSince(t0) < 500);
        return 0;
      },
      20000));
}

TEST(Faults, RankThatNeverJoinsHangsInitOfTheOthers) {
  auto out = runRanks(
      3,
      [](int rank, int n, const ncclUniqueId& id) {
        if (rank == 2) return 0;
        ncclComm_t comm;
        ncclCommInitRank(&comm, n, id, rank);
        return 3;  // init returned: the hang did not happen
      },
      1200);
  EXPECT_TRUE(out[0].timed_out);
  EXPECT_TRUE(out[1].timed_out);
  EXPECT_FALSE(out[2].timed_out);
  EXPECT_EQ(out[2].exit_code, 0);
}

}  // namespace
}  // namespace ncclsim_test
