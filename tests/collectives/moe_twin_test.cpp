// MoE dispatch and combine on the CPU twin through the C API, ranks as threads over memory they
// all see: every rank receives exactly the rows routed to its experts, grouped by local expert in
// (source rank, token, k) order with their sources and per-expert counts; each source learns
// where each slot went; and combine after identity experts gives every token the weighted sum of
// its own row over its used slots, bit for bit the fixed-order float32 sum. For 2-8 ranks, bf16,
// fp16 and fp32, unused (-1) slots, ranks without tokens, chunks that do not divide the tokens,
// skewed routing (every token to one rank, or one expert), and calls in sequence across the wrap
// of the epoch counter with two micro-batches in flight. Each in both combine modes: exact (a row
// per slot, rounded once) and rank sums (a row per token and expert rank, rounded twice).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/collectives/moe_job.h"

namespace ncclscope::collectives {
namespace {

using moe_test::MoeJob;
using moe_test::RankCall;

constexpr int32_t kModes[] = {NCCLSCOPE_MOE_COMBINE_EXACT, NCCLSCOPE_MOE_COMBINE_RANK_SUMS};

ncclscope_moe_config TwinConfig(int n, int32_t dtype, int32_t hidden, int32_t blocks,
                                int32_t combine = NCCLSCOPE_MOE_COMBINE_EXACT) {
  ncclscope_moe_config c{};
  c.combine = combine;
  c.nranks = n;
  c.num_experts = 3 * n;
  c.top_k = 3;
  c.hidden = hidden;
  c.dtype = dtype;
  c.max_tokens = 23;
  c.blocks = blocks;
  c.threads = 64;
  return c;
}

// Every rank's dispatch outputs against the reference order.
void CheckDispatch(const MoeJob& job, const std::vector<RankCall>& calls) {
  for (int r = 0; r < job.nranks; ++r) {
    SCOPED_TRACE("receiving rank " + std::to_string(r));
    const RankCall& c = calls[static_cast<size_t>(r)];
    ASSERT_EQ(c.dispatch_result, NCCLSCOPE_MOE_OK);
    ASSERT_EQ(c.dispatch_status.code, NCCLSCOPE_MOE_OK);
    EXPECT_EQ(c.dispatch_status.rank, -1);
    const auto order = job.Reference(calls, r);
    std::vector<int32_t> counts(static_cast<size_t>(job.plan.local_experts), 0);
    for (size_t i = 0; i < order.size(); ++i) {
      const auto [e, p, t, k] = order[i];
      ++counts[static_cast<size_t>(e)];
      const ncclscope_moe_source& s = c.recv_src[i];
      ASSERT_EQ(std::make_tuple(s.rank, s.token, s.k), std::make_tuple(p, t, k)) << "row " << i;
      const RankCall& from = calls[static_cast<size_t>(p)];
      ASSERT_EQ(0, std::memcmp(c.recv_x.data() + i * job.Row(), from.x.data() + t * job.Row(),
                               static_cast<size_t>(job.Row())))
          << "row " << i;
      // The source was told the row.
      EXPECT_EQ(from.send_rows[static_cast<size_t>(t * job.K() + k)], static_cast<int32_t>(i));
    }
    EXPECT_EQ(c.recv_counts, counts);
    // Rows past the received ones are left alone.
    for (size_t i = order.size(); i < c.recv_src.size(); ++i) ASSERT_EQ(c.recv_src[i].rank, -7);
  }
  // Unused slots are marked not sent.
  for (const RankCall& c : calls) {
    for (size_t j = 0; j < c.topk.size(); ++j) {
      if (c.topk[j] < 0) {
        EXPECT_EQ(c.send_rows[j], -1);
      }
    }
  }
}

// Identity experts: each rank's expert outputs are the rows it received.
void IdentityExperts(const MoeJob& job, std::vector<RankCall>* calls) {
  for (RankCall& c : *calls) {
    int64_t rows = 0;
    for (int32_t n : c.recv_counts) rows += n;
    c.expert_out.assign(c.recv_x.begin(), c.recv_x.begin() + rows * job.Row());
  }
}

// What combine must give token rows whose experts output scale(k, x), in the job's mode.
template <typename Scale>
std::vector<unsigned char> Expected(const MoeJob& job, const RankCall& c, Scale scale) {
  return job.plan.config.combine == NCCLSCOPE_MOE_COMBINE_RANK_SUMS
             ? job.ReferenceRankSums(c, scale)
             : job.ReferenceCombine(c, scale);
}

void CheckCombine(const MoeJob& job, const std::vector<RankCall>& calls) {
  for (int r = 0; r < job.nranks; ++r) {
    const RankCall& c = calls[static_cast<size_t>(r)];
    ASSERT_EQ(c.combine_result, NCCLSCOPE_MOE_OK) << "rank " << r;
    EXPECT_EQ(c.combine_status.code, NCCLSCOPE_MOE_OK);
    EXPECT_EQ(c.out, Expected(job, c, [](int32_t, float x) { return x; })) << "rank " << r;
  }
}

std::vector<RankCall> RandomCalls(const MoeJob& job, std::mt19937* gen, int unused_pct) {
  std::vector<RankCall> calls;
  const int32_t experts = job.plan.config.num_experts;
  for (int r = 0; r < job.nranks; ++r) {
    // Rank 1 has no tokens; the others between 1 and max_tokens.
    const int32_t tokens =
        r == 1 ? 0 : 1 + static_cast<int32_t>((*gen)() % job.plan.config.max_tokens);
    calls.push_back(job.Tokens(tokens, gen, unused_pct, [experts](std::mt19937* g) {
      return static_cast<int32_t>((*g)() % experts);
    }));
  }
  return calls;
}

TEST(MoeTwin, DispatchThenIdentityExpertsThenCombineGivesTheWeightedSumOnEveryRank) {
  std::mt19937 gen(3);
  for (int32_t mode : kModes) {
    for (int32_t dtype : {NCCLSCOPE_MOE_BF16, NCCLSCOPE_MOE_FP16, NCCLSCOPE_MOE_FP32}) {
      for (int n = 2; n <= 8; ++n) {
        SCOPED_TRACE(std::to_string(n) + " ranks, dtype " + std::to_string(dtype) +
                     ", combine mode " + std::to_string(mode));
        // 3 chunks: 23 tokens or fewer do not divide evenly.
        MoeJob job(TwinConfig(n, dtype, dtype == NCCLSCOPE_MOE_FP32 ? 12 : 24, 3, mode));
        std::vector<RankCall> calls = RandomCalls(job, &gen, /*unused_pct=*/20);
        job.Dispatch(&calls);
        CheckDispatch(job, calls);
        IdentityExperts(job, &calls);
        job.Combine(&calls);
        CheckCombine(job, calls);
      }
    }
  }
}

// Rank sums round twice: on bf16 they must differ from the exact combine somewhere (else the test
// above could not tell which reference a combine followed), by little.
TEST(MoeTwin, RankSumsDifferFromTheExactCombineInTheLastBitsOnly) {
  int differing = 0;
  for (int32_t mode : kModes) {
    std::mt19937 gen(3);  // the same tokens and routing in both modes
    MoeJob job(TwinConfig(8, NCCLSCOPE_MOE_BF16, 24, 3, mode));
    std::vector<RankCall> calls = RandomCalls(job, &gen, 20);
    job.Dispatch(&calls);
    IdentityExperts(job, &calls);
    job.Combine(&calls);
    CheckCombine(job, calls);
    if (mode == NCCLSCOPE_MOE_COMBINE_EXACT) continue;
    for (const RankCall& c : calls) {
      const std::vector<unsigned char> exact =
          job.ReferenceCombine(c, [](int32_t, float x) { return x; });
      for (int64_t i = 0; i < static_cast<int64_t>(c.out.size()) / 2; ++i) {
        const float got = moe_test::LoadMoeElement(job.Dtype(), c.out.data(), i);
        const float want = moe_test::LoadMoeElement(job.Dtype(), exact.data(), i);
        differing += got != want;
        EXPECT_LE(std::fabs(got - want), 0.05f + 0.02f * std::fabs(want)) << i;
      }
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(MoeTwin, ExpertOutputsGoBackToTheSlotTheyCameFrom) {
  // Experts that scale a row by its slot (k + 1): a combine that read another slot's row of the
  // same token would get another sum.
  for (int32_t mode : kModes) {
    std::mt19937 gen(5);
    MoeJob job(TwinConfig(4, NCCLSCOPE_MOE_FP32, 8, 2, mode));
    std::vector<RankCall> calls = RandomCalls(job, &gen, 10);
    job.Dispatch(&calls);
    CheckDispatch(job, calls);
    for (RankCall& c : calls) {
      int64_t rows = 0;
      for (int32_t n : c.recv_counts) rows += n;
      c.expert_out.resize(static_cast<size_t>(rows * job.Row()));
      for (int64_t i = 0; i < rows; ++i) {
        for (int32_t h = 0; h < 8; ++h) {
          const float x = moe_test::LoadMoeElement(job.Dtype(), c.recv_x.data() + i * job.Row(), h);
          moe_test::StoreMoeElement(
              job.Dtype(), c.expert_out.data() + i * job.Row(), h,
              x * static_cast<float>(c.recv_src[static_cast<size_t>(i)].k + 1));
        }
      }
    }
    job.Combine(&calls);
    for (const RankCall& c : calls) {
      ASSERT_EQ(c.combine_result, NCCLSCOPE_MOE_OK);
      EXPECT_EQ(c.out,
                Expected(job, c, [](int32_t k, float x) { return x * static_cast<float>(k + 1); }))
          << "combine mode " << mode;
    }
  }
}

TEST(MoeTwin, SkewedRoutingToOneRankOrOneExpertFitsTheDefaultCapacity) {
  std::mt19937 gen(9);
  for (const bool one_expert : {false, true}) {
    SCOPED_TRACE(one_expert ? "every slot to expert 4" : "every slot to rank 1's experts");
    // 3 experts per rank; rank sums with every slot on one rank: one sum per token
    ncclscope_moe_config config =
        TwinConfig(8, NCCLSCOPE_MOE_BF16, 8, 4, kModes[one_expert ? 1 : 0]);
    MoeJob job(config);
    std::vector<RankCall> calls;
    for (int r = 0; r < 8; ++r) {
      calls.push_back(job.Tokens(config.max_tokens, &gen, 0, [one_expert](std::mt19937* g) {
        return one_expert ? 4 : 3 + static_cast<int32_t>((*g)() % 3);
      }));
    }
    job.Dispatch(&calls);
    CheckDispatch(job, calls);
    // Every slot of every token of every rank went to rank 1: the worst case, exactly full.
    int32_t received = 0;
    for (int32_t n : calls[1].recv_counts) received += n;
    EXPECT_EQ(received, job.plan.config.recv_capacity);
    IdentityExperts(job, &calls);
    job.Combine(&calls);
    CheckCombine(job, calls);
  }
}

TEST(MoeTwin, CallsInSequenceAcrossTheEpochWrapWithTwoMicroBatchesInFlight) {
  std::mt19937 gen(11);
  for (int32_t mode : kModes) {
    MoeJob job(TwinConfig(5, NCCLSCOPE_MOE_BF16, 16, 3, mode), /*first_epoch=*/0xFFFFFFFEu);
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round) + ", epoch " + std::to_string(job.epoch));
      // dispatch A, dispatch B, combine A, combine B: each combine needs only its own dispatch's
      // outputs, not what the buffer held after it.
      std::vector<RankCall> a = RandomCalls(job, &gen, 15);
      std::vector<RankCall> b = RandomCalls(job, &gen, 15);
      job.Dispatch(&a);
      job.Dispatch(&b);
      CheckDispatch(job, a);
      CheckDispatch(job, b);
      IdentityExperts(job, &a);
      IdentityExperts(job, &b);
      job.Combine(&a);
      job.Combine(&b);
      CheckCombine(job, a);
      CheckCombine(job, b);
    }
  }
}

// CUDA-graph replay: calls whose args carry a stale epoch and NCCLSCOPE_MOE_DEVICE_EPOCH take the
// next one from the buffer, alternating with host epochs across the wrap; every result right.
TEST(MoeTwin, DeviceEpochsCountOnFromTheBufferAcrossTheWrapAndMixWithHostEpochs) {
  std::mt19937 gen(13);
  for (int32_t mode : kModes) {
    MoeJob job(TwinConfig(3, NCCLSCOPE_MOE_FP16, 8, 2, mode), /*first_epoch=*/0xFFFFFFFDu);
    for (int round = 0; round < 4; ++round) {
      SCOPED_TRACE("round " + std::to_string(round) + ", combine mode " + std::to_string(mode));
      job.device_epoch = round != 1;  // host epochs in round 1 only
      std::vector<RankCall> calls = RandomCalls(job, &gen, 10);
      job.Dispatch(&calls);
      CheckDispatch(job, calls);
      IdentityExperts(job, &calls);
      job.Combine(&calls);
      CheckCombine(job, calls);
      for (int r = 0; r < job.nranks; ++r) EXPECT_EQ(job.LastEpoch(r), job.epoch - 1) << r;
    }
    EXPECT_EQ(job.epoch, 5u);  // 0xFFFFFFFD + 8 calls, wrapped
  }
}

// A replay without the flag (args whose epoch the buffer has passed) is refused, never run against
// flags that would let it through without its peers: on every rank at once, or on one rank while
// its peer counts on, whose bounded wait then names it.
TEST(MoeTwin, AStaleEpochWithoutTheFlagIsRefusedNotRunAgainstPassedFlags) {
  std::mt19937 gen(17);
  MoeJob job(TwinConfig(2, NCCLSCOPE_MOE_BF16, 8, 1));
  std::vector<RankCall> calls = RandomCalls(job, &gen, 0);
  job.Dispatch(&calls);  // epoch 1 on both
  CheckDispatch(job, calls);
  // Replaying the first call's args (epoch 1) on rank 0 while rank 1 asks for the device epoch (2):
  // rank 1 waits for rank 0's flag of epoch 2 that never comes.
  job.adjust = [](int r, ncclscope_moe_common_args* a) {
    if (r == 0) a->epoch = 1;
    if (r == 1) a->flags = NCCLSCOPE_MOE_DEVICE_EPOCH;
  };
  job.Dispatch(&calls, /*absent=*/-1, moe_test::kSecond / 2);
  const ncclscope_moe_status* status[2] = {&calls[0].dispatch_status, &calls[1].dispatch_status};
  const ncclscope_moe_stall* stall[2] = {&calls[0].stall, &calls[1].stall};
  EXPECT_EQ(calls[0].dispatch_result, NCCLSCOPE_MOE_STALE_EPOCH);
  EXPECT_EQ(status[0]->code, NCCLSCOPE_MOE_STALE_EPOCH);
  EXPECT_EQ(status[0]->rank, 0);
  EXPECT_EQ(status[0]->detail, 2);  // the epoch the buffer expected
  EXPECT_EQ(status[1]->code, NCCLSCOPE_MOE_TIMEOUT);
  EXPECT_EQ(status[1]->detail, 0);
  EXPECT_EQ(stall[1]->want, 2u);
  EXPECT_EQ(stall[1]->seen, 1u);

  // Every rank replays a passed epoch: refused at once everywhere, nothing written.
  MoeJob again(TwinConfig(3, NCCLSCOPE_MOE_BF16, 8, 1));
  std::vector<RankCall> more = RandomCalls(again, &gen, 0);
  again.Dispatch(&more);
  CheckDispatch(again, more);
  const std::vector<unsigned char> received = more[0].recv_x;
  again.epoch = 1;  // the first call's args once more
  again.Dispatch(&more);
  for (const RankCall& c : more) {
    EXPECT_EQ(c.dispatch_result, NCCLSCOPE_MOE_STALE_EPOCH);
    EXPECT_EQ(c.dispatch_status.detail, 2);
  }
  EXPECT_NE(more[0].recv_x, received);  // still the poison Dispatch wrote before the call
}

}  // namespace
}  // namespace ncclscope::collectives
