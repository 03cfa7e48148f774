// The order of a plan's send and receive tasks (their P2p events and KernelCh events), as NCCL
// 2.28.9 builds it: src/init.cc ncclP2pSchedule makes each rank's rounds, src/enqueue.cc
// scheduleP2pTasksToPlan takes the peers' FIFO queues round after round, a round's send before
// its receive (the order of ncclIntruQueueEnqueue into plan->p2pTaskQueue, which
// ncclProfilerStartTaskEvents walks).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/emulator/profiler_task_order.h"

namespace ncclsim {
namespace {

// src/init.cc ncclP2pSchedule's own comment: "Example sequence for 16 ranks: 0, 1, 3, 6, 10, 15,
// 5, 12, 4, 13, 7, 2, 14, 11, 9, 8" (one rank per group, as every rank is a node of its own in
// the emulator).
TEST(P2pSchedule, SixteenRanksFollowNcclsQuadraticDeltas) {
  const std::vector<int> deltas = {0, 1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14, 11, 9, 8};
  for (const int rank : {0, 5, 15}) {
    const std::vector<P2pRound> rounds = p2pSchedule(rank, 16);
    ASSERT_EQ(rounds.size(), deltas.size());
    for (size_t i = 0; i < deltas.size(); ++i) {
      EXPECT_EQ(rounds[i].send_rank, (rank + deltas[i]) % 16) << "rank " << rank << " round " << i;
      EXPECT_EQ(rounds[i].recv_rank, (rank - deltas[i] + 16) % 16)
          << "rank " << rank << " round " << i;
    }
  }
}

// Not a power of two: the deltas of the next one (8: 0, 1, 3, 6, 2, 7, 5, 4) without those
// past the communicator; every peer is met exactly once.
TEST(P2pSchedule, FiveRanksSkipDeltasPastTheCommunicator) {
  const std::vector<P2pRound> rounds = p2pSchedule(2, 5);
  std::vector<int> sends, recvs;
  for (const P2pRound& r : rounds) {
    sends.push_back(r.send_rank);
    recvs.push_back(r.recv_rank);
  }
  EXPECT_EQ(sends, (std::vector<int>{2, 3, 0, 4, 1}));  // deltas 0, 1, 3, 2, 4
  EXPECT_EQ(recvs, (std::vector<int>{2, 1, 4, 0, 3}));
}

std::string Describe(const std::vector<size_t>& order, const std::vector<bool>& send,
                     const std::vector<int>& peer) {
  std::string s;
  for (const size_t i : order)
    s += std::string(send[i] ? "S" : "R") + std::to_string(peer[i]) + " ";
  return s;
}

// ncclAlltoAll appends a send and a receive per rank in rank order (src/enqueue.cc
// ncclEnqueueCheck); the plan takes them by rounds.
TEST(P2pPlanOrder, AlltoAllOfFiveRanksGoesByRounds) {
  std::vector<bool> send;
  std::vector<int> peer;
  for (int r = 0; r < 5; ++r) {
    send.push_back(true);
    peer.push_back(r);
    send.push_back(false);
    peer.push_back(r);
  }
  EXPECT_EQ(Describe(p2pPlanOrder(2, 5, send, peer), send, peer), "S2 R2 S3 R1 S0 R4 S4 R0 S1 R3 ");
  EXPECT_EQ(Describe(p2pPlanOrder(0, 2, {true, false, true, false}, {0, 0, 1, 1}),
                     {true, false, true, false}, {0, 0, 1, 1}),
            "S0 R0 S1 R1 ");
  EXPECT_EQ(Describe(p2pPlanOrder(1, 2, {true, false, true, false}, {0, 0, 1, 1}),
                     {true, false, true, false}, {0, 0, 1, 1}),
            "S1 R1 S0 R0 ");
}

// Two sends to one peer in one group: the queue is FIFO and each pass over the rounds takes one,
// so the second comes after every other peer's first.
TEST(P2pPlanOrder, SeveralTasksToOnePeerTakeOnePerPass) {
  const std::vector<bool> send = {true, true, false, true};
  const std::vector<int> peer = {1, 1, 2, 2};
  // Rank 0 of 3: deltas 0, 1, 3 (skipped), 2 -> rounds (0,0), (1,2), (2,1).
  EXPECT_EQ(Describe(p2pPlanOrder(0, 3, send, peer), send, peer), "S1 R2 S2 S1 ");
}

TEST(P2pPlanOrder, APeerOutsideTheCommunicatorComesLast) {
  const std::vector<bool> send = {true, false};
  const std::vector<int> peer = {7, 1};
  EXPECT_EQ(Describe(p2pPlanOrder(0, 2, send, peer), send, peer), "R1 S7 ");
}

}  // namespace
}  // namespace ncclsim
