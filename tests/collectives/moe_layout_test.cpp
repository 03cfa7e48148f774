// Where MoE dispatch puts every row (collectives/moe/moe_layout.*): token chunks cover each rank's
// tokens exactly; slots number a chunk's entries per expert in (token, k) order; and the offsets a
// receiving rank computes from every rank's per-chunk counts put each entry at its index in the
// plain reference order (local expert, source rank, token, k), for every rank count 2-8, chunk
// counts that do and do not divide the tokens, ranks without tokens, unused (-1) and
// out-of-range entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/moe/moe_layout.h"

namespace ncclscope::collectives {
namespace {

TEST(MoeLayout, TokenChunksCoverTheTokensInOrderAndDifferByAtMostOne) {
  for (int32_t tokens : {0, 1, 5, 64, 200}) {
    for (uint32_t blocks : {1u, 3u, 7u, 64u}) {
      int32_t next = 0;
      int32_t smallest = tokens, largest = 0;
      for (uint32_t b = 0; b < blocks; ++b) {
        int32_t lo, hi;
        TokenChunk(tokens, blocks, b, &lo, &hi);
        EXPECT_EQ(lo, next) << tokens << " tokens, block " << b << " of " << blocks;
        next = hi;
        smallest = std::min(smallest, hi - lo);
        largest = std::max(largest, hi - lo);
      }
      EXPECT_EQ(next, tokens);
      EXPECT_LE(largest - smallest, 1);
    }
  }
}

TEST(MoeLayout, SlotsNumberEachExpertsEntriesInTokenThenKOrder) {
  // 4 tokens, top-3, 4 experts; token 2 has an entry out of range (treated as unused).
  const std::vector<int32_t> topk = {1, 3,  -1,  //
                                     1, 0,  3,   //
                                     4, 1,  -1,  //
                                     0, -2, 1};
  std::vector<int32_t> slot(topk.size(), 99);
  std::vector<int32_t> counts(4, 0);
  int32_t first_bad = -1;
  AssignSlots(topk.data(), 3, 0, 4, 4, slot.data(), counts.data(), &first_bad);
  EXPECT_EQ(slot, (std::vector<int32_t>{0, 0, -1, 1, 0, 1, -1, 2, -1, 1, -1, 3}));
  EXPECT_EQ(counts, (std::vector<int32_t>{2, 4, 0, 2}));
  EXPECT_EQ(first_bad, 2);
  // A chunk numbers from 0 on its own: tokens [1, 3) only.
  std::fill(counts.begin(), counts.end(), 0);
  first_bad = -1;
  AssignSlots(topk.data(), 3, 1, 3, 4, slot.data(), counts.data(), &first_bad);
  EXPECT_EQ(slot[3], 0);
  EXPECT_EQ(slot[7], 1);
  EXPECT_EQ(counts, (std::vector<int32_t>{1, 2, 0, 1}));
}

// Every rank's routing, chunked and counted as the dispatch's source side does.
struct Routing {
  int nranks;
  int32_t experts, top_k;
  uint32_t blocks;
  std::vector<std::vector<int32_t>> topk, slot, counts;  // per rank

  Routing(int n, int32_t e, int32_t k, uint32_t b, std::mt19937* gen, bool skewed)
      : nranks(n), experts(e), top_k(k), blocks(b) {
    for (int r = 0; r < n; ++r) {
      const int32_t tokens = r == 1 ? 0 : static_cast<int32_t>((*gen)() % 40);
      std::vector<int32_t> t(static_cast<size_t>(tokens * k));
      for (int32_t& v : t) {
        const uint32_t roll = (*gen)() % 10;
        v = roll == 0   ? -1
            : roll == 1 ? e + 3                                     // out of range
            : skewed    ? static_cast<int32_t>((*gen)() % (e / n))  // rank 0's experts only
                        : static_cast<int32_t>((*gen)() % e);
      }
      topk.push_back(t);
      slot.emplace_back(t.size());
      counts.emplace_back(static_cast<size_t>(e) * b, 0);
      for (uint32_t c = 0; c < b; ++c) {
        int32_t lo, hi;
        TokenChunk(tokens, b, c, &lo, &hi);
        std::vector<int32_t> per_expert(static_cast<size_t>(e), 0);
        int32_t bad = -1;
        AssignSlots(topk[r].data(), k, lo, hi, e, slot[r].data(), per_expert.data(), &bad);
        for (int32_t x = 0; x < e; ++x) counts[r][static_cast<size_t>(x) * b + c] = per_expert[x];
      }
    }
  }
};

void CheckAgainstReferenceOrder(const Routing& g) {
  const int32_t local = g.experts / g.nranks;
  std::vector<const int32_t*> counts;
  for (const auto& c : g.counts) counts.push_back(c.data());
  for (int r = 0; r < g.nranks; ++r) {
    // The reference: every entry routed to rank r, sorted by (local expert, rank, token, k).
    std::vector<std::tuple<int32_t, int, int32_t, int32_t>> order;
    for (int p = 0; p < g.nranks; ++p) {
      for (size_t j = 0; j < g.topk[p].size(); ++j) {
        const int32_t e = g.topk[p][j];
        if (e >= r * local && e < (r + 1) * local) {
          order.emplace_back(e - r * local, p, static_cast<int32_t>(j) / g.top_k,
                             static_cast<int32_t>(j) % g.top_k);
        }
      }
    }
    std::sort(order.begin(), order.end());
    std::vector<int32_t> expert_rows(static_cast<size_t>(local), -1);
    for (uint32_t b = 0; b < g.blocks; ++b) {
      std::vector<int32_t> offset(static_cast<size_t>(g.experts));
      const int64_t rows = ReceiveOffsets(counts.data(), r, g.nranks, local, g.blocks, b,
                                          offset.data(), expert_rows.data());
      ASSERT_EQ(rows, static_cast<int64_t>(order.size())) << "rank " << r;
      for (int p = 0; p < g.nranks; ++p) {
        int32_t lo, hi;
        TokenChunk(static_cast<int32_t>(g.topk[p].size()) / g.top_k, g.blocks, b, &lo, &hi);
        for (int32_t t = lo; t < hi; ++t) {
          for (int32_t k = 0; k < g.top_k; ++k) {
            const size_t j =
                static_cast<size_t>(t) * static_cast<size_t>(g.top_k) + static_cast<size_t>(k);
            const int32_t e = g.topk[p][j];
            if (e < r * local || e >= (r + 1) * local) continue;
            const int32_t el = e - r * local;
            const int32_t row = offset[static_cast<size_t>(el) * static_cast<size_t>(g.nranks) +
                                       static_cast<size_t>(p)] +
                                g.slot[p][j];
            const auto want = std::find(order.begin(), order.end(), std::make_tuple(el, p, t, k));
            ASSERT_EQ(row, want - order.begin())
                << "rank " << r << " receiving rank " << p << " token " << t << " slot " << k;
          }
        }
      }
    }
    for (int32_t e = 0; e < local; ++e) {
      EXPECT_EQ(expert_rows[e], std::count_if(order.begin(), order.end(),
                                              [&](const auto& x) { return std::get<0>(x) == e; }));
    }
  }
}

TEST(MoeLayout, ReceiveOffsetsPutEveryEntryAtItsReferenceRow) {
  std::mt19937 gen(7);
  for (int n = 2; n <= 8; ++n) {
    for (uint32_t blocks : {1u, 3u, 7u}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(blocks) + " chunks");
      CheckAgainstReferenceOrder(Routing(n, 4 * n, 3, blocks, &gen, false));
      CheckAgainstReferenceOrder(Routing(n, 2 * n, 4, blocks, &gen, /*skewed=*/true));
    }
  }
}

}  // namespace
}  // namespace ncclscope::collectives
