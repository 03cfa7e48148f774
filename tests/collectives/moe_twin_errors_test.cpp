// What a MoE call that cannot succeed tells every rank (collectives/include/ncclscope/moe.h,
// "Errors"), on the CPU twin with ranks as threads: a dispatch whose rows overflow a rank's
// recv_capacity fails on every rank naming that rank and the rows it needed, writes no row there
// and leaves the buffer usable for the next call; a routing entry out of range and too many tokens
// are reported the same way; a combine handed outputs no dispatch wrote is refused; a rank that
// never arrives ends every other rank's wait with its name; arguments not from a plan touch
// nothing (misaligned rows and buffers included).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/collectives/moe_job.h"

namespace ncclscope::collectives {
namespace {

using moe_test::kSecond;
using moe_test::MoeJob;
using moe_test::RankCall;

ncclscope_moe_config CapacityConfig(int n, int32_t capacity,
                                    int32_t combine = NCCLSCOPE_MOE_COMBINE_EXACT) {
  ncclscope_moe_config c{};
  c.combine = combine;
  c.nranks = n;
  c.num_experts = 2 * n;
  c.top_k = 2;
  c.hidden = 8;
  c.dtype = NCCLSCOPE_MOE_BF16;
  c.max_tokens = 10;
  c.recv_capacity = capacity;
  c.blocks = 3;
  c.threads = 64;
  return c;
}

// Every rank's tokens, each slot to an expert of rank `to` (or -1 for the second slot when
// `one_slot`).
std::vector<RankCall> RoutedTo(const MoeJob& job, int to, std::mt19937* gen) {
  std::vector<RankCall> calls;
  for (int r = 0; r < job.nranks; ++r) {
    calls.push_back(job.Tokens(
        6, gen, 0, [to](std::mt19937* g) { return 2 * to + static_cast<int32_t>((*g)() % 2); }));
  }
  return calls;
}

void ExpectEveryRank(const std::vector<RankCall>& calls, bool combine, int32_t code, int rank,
                     int32_t detail) {
  for (size_t r = 0; r < calls.size(); ++r) {
    const ncclscope_moe_status& s = combine ? calls[r].combine_status : calls[r].dispatch_status;
    EXPECT_EQ(combine ? calls[r].combine_result : calls[r].dispatch_result, code) << "rank " << r;
    EXPECT_EQ(s.code, code) << "rank " << r;
    EXPECT_EQ(s.rank, rank) << "rank " << r;
    EXPECT_EQ(s.detail, detail) << "rank " << r;
  }
}

TEST(MoeTwinErrors, AnOverflowFailsOnEveryRankWritesNoRowAndTheNextCallWorks) {
  std::mt19937 gen(1);
  // 4 ranks x 6 tokens x 2 slots to rank 2: 48 rows against a capacity of 40.
  MoeJob job(CapacityConfig(4, 40));
  std::vector<RankCall> calls = RoutedTo(job, 2, &gen);
  job.Dispatch(&calls);
  ExpectEveryRank(calls, false, NCCLSCOPE_MOE_RECV_OVERFLOW, 2, 48);
  const RankCall& full = calls[2];
  for (const ncclscope_moe_source& s : full.recv_src) ASSERT_EQ(s.rank, -7);
  for (unsigned char byte : full.recv_x) ASSERT_EQ(byte, 0xA5);
  // Its counts say what it would have received.
  EXPECT_EQ(full.recv_counts[0] + full.recv_counts[1], 48);
  // The next call, within the capacity, succeeds on the same buffers.
  std::vector<RankCall> next = RoutedTo(job, 2, &gen);
  next[0].tokens = 2;  // 2 + 3 x 6 tokens, 2 slots: 40 rows, exactly the capacity
  next[0].topk.resize(4);
  job.Dispatch(&next);
  for (const RankCall& c : next) EXPECT_EQ(c.dispatch_result, NCCLSCOPE_MOE_OK);
  EXPECT_EQ(next[2].recv_counts[0] + next[2].recv_counts[1], 40);
}

TEST(MoeTwinErrors, ARoutingEntryOutOfRangeIsNamedAndTheRestIsDispatched) {
  std::mt19937 gen(2);
  MoeJob job(CapacityConfig(3, 0));
  std::vector<RankCall> calls = RoutedTo(job, 1, &gen);
  calls[2].topk[9] = 6;    // token 4 of rank 2: one past the last expert
  calls[1].topk[11] = -3;  // token 5 of rank 1
  job.Dispatch(&calls);
  // Rank 1 comes first.
  ExpectEveryRank(calls, false, NCCLSCOPE_MOE_BAD_EXPERT, 1, 5);
  EXPECT_EQ(calls[2].send_rows[9], -1);
  EXPECT_EQ(calls[1].recv_counts[0] + calls[1].recv_counts[1], 3 * 12 - 2);
}

TEST(MoeTwinErrors, MoreTokensThanMaxTokensAreRefusedOnEveryRank) {
  std::mt19937 gen(3);
  MoeJob job(CapacityConfig(2, 0));
  std::vector<RankCall> calls = RoutedTo(job, 0, &gen);
  calls[1].tokens = 11;
  job.Dispatch(&calls);
  ExpectEveryRank(calls, false, NCCLSCOPE_MOE_TOO_MANY_TOKENS, 1, 11);
}

TEST(MoeTwinErrors, ACombineHandleNoDispatchWroteIsRefused) {
  for (int32_t mode : {NCCLSCOPE_MOE_COMBINE_EXACT, NCCLSCOPE_MOE_COMBINE_RANK_SUMS}) {
    SCOPED_TRACE("combine mode " + std::to_string(mode));
    std::mt19937 gen(4);
    MoeJob job(CapacityConfig(3, 0, mode));
    std::vector<RankCall> calls = RoutedTo(job, 0, &gen);
    job.Dispatch(&calls);
    for (RankCall& c : calls) {
      ASSERT_EQ(c.dispatch_result, NCCLSCOPE_MOE_OK);
      c.expert_out.assign(c.recv_x.size(), 0);
    }
    calls[1].send_rows[7] = 36;  // rank 0 holds 36 rows: one past the last
    job.Combine(&calls);
    ExpectEveryRank(calls, true, NCCLSCOPE_MOE_BAD_HANDLE, 1, 3);
    // Counts that cannot be a dispatch's are refused before anything is read.
    calls[1].send_rows[7] = 0;
    calls[2].recv_counts[0] = -1;
    job.Combine(&calls);
    ExpectEveryRank(calls, true, NCCLSCOPE_MOE_BAD_HANDLE, 2, -1);
  }
}

// Rank sums: a rank that never comes to a combine is named at the start barrier, as in dispatch;
// the call's third barrier (middle) changes nothing of that.
TEST(MoeTwinErrors, ARankThatNeverComesToARankSumsCombineIsNamed) {
  std::mt19937 gen(6);
  MoeJob job(CapacityConfig(3, 0, NCCLSCOPE_MOE_COMBINE_RANK_SUMS), /*first_epoch=*/0xFFFFFFFFu);
  std::vector<RankCall> calls = RoutedTo(job, 2, &gen);
  job.Dispatch(&calls);
  for (RankCall& c : calls) {
    ASSERT_EQ(c.dispatch_result, NCCLSCOPE_MOE_OK);
    c.expert_out.assign(c.recv_x.size(), 0);
  }
  job.Combine(&calls, /*absent=*/0, /*timeout=*/kSecond);
  for (int r : {1, 2}) {
    const RankCall& c = calls[static_cast<size_t>(r)];
    EXPECT_EQ(c.combine_status.code, NCCLSCOPE_MOE_TIMEOUT);
    EXPECT_EQ(c.combine_status.detail, 0);
    EXPECT_EQ(c.stall.peer, 0);
    EXPECT_EQ(c.stall.barrier, 0u);
    EXPECT_EQ(c.stall.want, 0u);  // the combine's epoch, past the wrap
  }
}

TEST(MoeTwinErrors, ARankThatNeverArrivesIsNamedByEveryOtherRank) {
  std::mt19937 gen(5);
  MoeJob job(CapacityConfig(4, 0), /*first_epoch=*/7);
  std::vector<RankCall> calls = RoutedTo(job, 1, &gen);
  job.Dispatch(&calls, /*absent=*/3, /*timeout=*/2 * kSecond);
  for (int r : {0, 1, 2}) {
    const RankCall& c = calls[static_cast<size_t>(r)];
    EXPECT_EQ(c.dispatch_result, NCCLSCOPE_MOE_TIMEOUT);
    EXPECT_EQ(c.dispatch_status.code, NCCLSCOPE_MOE_TIMEOUT);
    EXPECT_EQ(c.dispatch_status.rank, r);
    EXPECT_EQ(c.dispatch_status.detail, 3);
    EXPECT_EQ(c.stall.code, 1);
    EXPECT_EQ(c.stall.rank, r);
    EXPECT_EQ(c.stall.peer, 3);
    EXPECT_EQ(c.stall.block, 0u);
    EXPECT_EQ(c.stall.barrier, 0u);  // start
    EXPECT_EQ(c.stall.want, 7u);
    EXPECT_EQ(c.stall.seen, 6u);
  }
}

TEST(MoeTwinErrors, ArgumentsNotFromAPlanTouchNothing) {
  MoeJob job(CapacityConfig(2, 0));
  ncclscope_moe_status status{-9, -9, -9};
  std::vector<unsigned char> rows(1024);
  std::vector<int32_t> ints(64);
  std::vector<ncclscope_moe_source> src(64);
  auto args = [&] {
    ncclscope_moe_dispatch_args a{};
    a.common = job.Common(0, 1, 1, &status, nullptr, kSecond);
    a.x = rows.data();
    a.topk_idx = ints.data();
    a.recv_x = rows.data();
    a.recv_src = src.data();
    a.recv_counts = ints.data();
    a.send_rows = ints.data();
    return a;
  };
  std::vector<ncclscope_moe_dispatch_args> bad(8, args());
  bad[0].common.rank = 2;
  bad[1].common.plan.buffer_rows += 16;  // not what the plan gives
  bad[2].common.plan.config.nranks = 9;
  bad[3].common.buffer[1] = nullptr;
  bad[4].recv_x = nullptr;
  bad[5].common.status = nullptr;
  bad[6].recv_x = rows.data() + 8;  // rows must be whole 16-byte packs apart from 0
  bad[7].common.buffer[1] = static_cast<unsigned char*>(bad[7].common.buffer[1]) + 16;
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(ncclscope_moe_dispatch_on_cpu(&bad[i]), NCCLSCOPE_MOE_INVALID_ARGUMENT) << i;
  }
  EXPECT_EQ(ncclscope_moe_dispatch_on_cpu(nullptr), NCCLSCOPE_MOE_INVALID_ARGUMENT);
  EXPECT_EQ(ncclscope_moe_combine_on_cpu(nullptr), NCCLSCOPE_MOE_INVALID_ARGUMENT);
  EXPECT_EQ(status.code, -9);
}

}  // namespace
}  // namespace ncclscope::collectives
