// Which of a group's sends and receives ncclscope's exchange takes (exchange_plan.h), and the
// property everything rests on: for every pair, the sender's part and the receiver's part are
// taken alike, whatever else each rank's group holds, so no part waits in ncclscope's kernel for
// a peer that sent its side to NCCL.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "collectives/planner/exchange_plan.h"

namespace ncclscope::collectives {
namespace {

ExchangeCall Call(const std::vector<ExchangeOp>& ops, int rank, int nranks) {
  ExchangeCall c;
  c.ops = ops.data();
  c.nops = ops.size();
  c.rank = rank;
  c.nranks = nranks;
  c.single_node = true;
  c.peers_reachable = true;
  c.gpu = GpuClass::kHopper;
  c.buffer_bytes = size_t{16} << 20;
  return c;
}

TEST(ExchangePlan, EachPartAloneOnItsPairAndOfWholePacksIsOurs) {
  // Rank 1 of 4: send 4 KiB to 0, receive 4 KiB from 0, send 6 bytes to 2, two receives from 3,
  // an empty send to 3, to itself a send and a receive of 1 KiB.
  const std::vector<ExchangeOp> ops = {{0, true, 4096}, {0, false, 4096}, {2, true, 6},
                                       {3, false, 64},  {3, false, 64},   {3, true, 0},
                                       {1, true, 1024}, {1, false, 1024}, {9, true, 64}};
  const ExchangeCall c = Call(ops, 1, 4);
  EXPECT_EQ(ExchangeOpFallback(c, 0), Fallback::kNone);
  EXPECT_EQ(ExchangeOpFallback(c, 1), Fallback::kNone);
  EXPECT_EQ(ExchangeOpFallback(c, 2), Fallback::kAlignment);
  EXPECT_EQ(ExchangeOpFallback(c, 3), Fallback::kSeveralOnPair);
  EXPECT_EQ(ExchangeOpFallback(c, 4), Fallback::kSeveralOnPair);
  EXPECT_EQ(ExchangeOpFallback(c, 5), Fallback::kEmpty);
  EXPECT_EQ(ExchangeOpFallback(c, 6), Fallback::kNone);
  EXPECT_EQ(ExchangeOpFallback(c, 7), Fallback::kNone);
  EXPECT_EQ(ExchangeOpFallback(c, 8), Fallback::kPeer);
  const ExchangePlan p = PlanExchange(c);
  EXPECT_EQ(p.algorithm, Algorithm::kExchange);
  ASSERT_EQ(p.nparts, 4u);
  EXPECT_EQ(std::vector<uint32_t>(p.part_op, p.part_op + p.nparts),
            (std::vector<uint32_t>{0, 1, 6, 7}));
  EXPECT_EQ(p.blocks_per_part, p.row->blocks_per_part);
  EXPECT_EQ(p.sub_bytes * p.blocks_per_part, p.slot_bytes);
  EXPECT_EQ(ExchangeChunks(p, 0), 0u);
  EXPECT_EQ(ExchangeChunks(p, 16), 1u);
  EXPECT_EQ(ExchangeChunks(p, p.slot_bytes), 1u);
  EXPECT_EQ(ExchangeChunks(p, p.slot_bytes + 16), 2u);
}

TEST(ExchangePlan, ASendToItselfGoesWithItsReceiveOrNotAtAll) {
  // Sizes differ (NCCL's error to report), or the receive is doubled: both to NCCL.
  for (const auto& ops : {std::vector<ExchangeOp>{{0, true, 64}, {0, false, 128}},
                          std::vector<ExchangeOp>{{0, true, 64}, {0, false, 64}, {0, false, 64}},
                          std::vector<ExchangeOp>{{0, true, 64}}}) {
    const ExchangeCall c = Call(ops, 0, 2);
    EXPECT_EQ(ExchangeOpFallback(c, 0), Fallback::kSelfUnpaired);
    EXPECT_EQ(PlanExchange(c).algorithm, Algorithm::kNccl);
  }
}

TEST(ExchangePlan, TheCommunicatorsFactsSendEverythingToNccl) {
  const std::vector<ExchangeOp> ops = {{1, true, 4096}, {1, false, 4096}};
  struct Case {
    const char* what;
    void (*change)(ExchangeCall*);
    Fallback want;
  };
  const Case cases[] = {
      {"one rank", [](ExchangeCall* c) { c->nranks = 1; }, Fallback::kRanks},
      {"nine ranks", [](ExchangeCall* c) { c->nranks = 9; }, Fallback::kRanks},
      {"two hosts", [](ExchangeCall* c) { c->single_node = false; }, Fallback::kNotOneNode},
      {"no p2p", [](ExchangeCall* c) { c->peers_reachable = false; }, Fallback::kNoPeerAccess},
      {"no kernels", [](ExchangeCall* c) { c->gpu = GpuClass::kUnknown; }, Fallback::kGpu},
      {"captured", [](ExchangeCall* c) { c->capturing = true; }, Fallback::kCapture},
      {"small buffer", [](ExchangeCall* c) { c->buffer_bytes = 4096; }, Fallback::kBuffer},
      // Two 256 KiB chunk slots per destination: 2 ranks need 1 MiB, one byte less is too small.
      {"one slot per destination", [](ExchangeCall* c) { c->buffer_bytes = (size_t{1} << 20) - 1; },
       Fallback::kBuffer},
  };
  for (const Case& k : cases) {
    ExchangeCall c = Call(ops, 0, 2);
    k.change(&c);
    const ExchangePlan p = PlanExchange(c);
    EXPECT_EQ(p.algorithm, Algorithm::kNccl) << k.what;
    EXPECT_EQ(p.fallback, k.want) << k.what;
    char line[256];
    ExplainExchangePlan(p, c, line, sizeof line);
    EXPECT_EQ(std::string(line), std::string("nccl: ") + FallbackText(k.want)) << k.what;
  }
  EXPECT_EQ(PlanExchange(Call({}, 0, 2)).fallback, Fallback::kEmpty);
  ExchangeCall enough = Call(ops, 0, 2);
  enough.buffer_bytes = size_t{1} << 20;
  EXPECT_EQ(PlanExchange(enough).algorithm, Algorithm::kExchange);
}

// Random groups as NCCL requires them to match: the k-th send of s to d and the k-th receive of
// d from s have one size. Each rank sees its own ops only, in its own order, with pairs of zero,
// one or two operations, sizes of whole packs or not, and empty ones. For every pair, the sender
// and the receiver take their parts alike.
TEST(ExchangePlan, BothSidesOfEveryPairDecideAlike) {
  std::mt19937 gen(20261204);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(gen() % 7);
    // sizes[s][d]: the sizes of s's sends to d, in order.
    std::vector<std::vector<std::vector<size_t>>> sizes(
        static_cast<size_t>(n), std::vector<std::vector<size_t>>(static_cast<size_t>(n)));
    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        const int count = static_cast<int>(gen() % 4) == 0 ? 2 : static_cast<int>(gen() % 2);
        for (int k = 0; k < count; ++k) {
          const size_t kinds[] = {0, 16, 48, 4096, 6, 1 << 20};
          sizes[s][d].push_back(kinds[gen() % 6]);
        }
      }
    }
    std::vector<std::vector<ExchangeOp>> group(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q) {
        for (size_t b : sizes[r][q]) group[r].push_back({q, true, b});
        for (size_t b : sizes[q][r]) group[r].push_back({q, false, b});
      }
      std::shuffle(group[r].begin(), group[r].end(), gen);
    }
    // taken[s][d][k]: whether the k-th op of the pair is ours, as the sender and the receiver say.
    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        std::vector<bool> by_sender, by_receiver;
        const ExchangeCall cs = Call(group[s], s, n);
        for (size_t i = 0; i < group[s].size(); ++i) {
          if (group[s][i].send && group[s][i].peer == d) {
            by_sender.push_back(ExchangeOpFallback(cs, i) == Fallback::kNone);
          }
        }
        const ExchangeCall cd = Call(group[d], d, n);
        for (size_t i = 0; i < group[d].size(); ++i) {
          if (!group[d][i].send && group[d][i].peer == s) {
            by_receiver.push_back(ExchangeOpFallback(cd, i) == Fallback::kNone);
          }
        }
        ASSERT_EQ(by_sender, by_receiver) << "trial " << trial << ", " << s << " -> " << d;
      }
    }
  }
}

}  // namespace
}  // namespace ncclscope::collectives
