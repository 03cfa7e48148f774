// ncclscope_moe_plan_make (collectives/include/ncclscope/moe.h): the defaults a framework gets,
// every value it refuses, and a registered-buffer layout whose regions fit what the calls write.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/moe/moe_buffer.h"

namespace ncclscope::collectives {
namespace {

ncclscope_moe_config PlanConfig() {
  ncclscope_moe_config c{};
  c.nranks = 8;
  c.num_experts = 256;
  c.top_k = 8;
  c.hidden = 7168;
  c.dtype = NCCLSCOPE_MOE_BF16;
  c.max_tokens = 128;
  return c;
}

TEST(MoePlan, DefaultsGiveACapacityNoRoutingCanExceed) {
  const ncclscope_moe_config c = PlanConfig();
  ncclscope_moe_plan p;
  ASSERT_EQ(ncclscope_moe_plan_make(&c, &p), NCCLSCOPE_MOE_OK);
  EXPECT_EQ(p.config.recv_capacity, 8 * 128 * 8);
  EXPECT_EQ(p.config.blocks, 32);
  EXPECT_EQ(p.config.threads, 512);
  EXPECT_EQ(p.local_experts, 32);
  EXPECT_EQ(p.element_bytes, 2);
  EXPECT_EQ(p.row_bytes, 7168 * 2);
}

TEST(MoePlan, RegionsAreAlignedDisjointAndHoldWhatTheCallsWrite) {
  for (const int32_t capacity : {0, 5, 100000}) {
    ncclscope_moe_config c = PlanConfig();
    c.recv_capacity = capacity;
    c.combine = capacity == 5 ? NCCLSCOPE_MOE_COMBINE_RANK_SUMS : NCCLSCOPE_MOE_COMBINE_EXACT;
    c.blocks = 7;
    ncclscope_moe_plan p;
    ASSERT_EQ(ncclscope_moe_plan_make(&c, &p), NCCLSCOPE_MOE_OK);
    const int64_t entries = int64_t{c.max_tokens} * c.top_k * 4;
    const int64_t rows = std::max<int64_t>(c.max_tokens, p.config.recv_capacity) * p.row_bytes;
    std::vector<std::pair<int64_t, int64_t>> regions = {
        {p.buffer_signal, sizeof(Signal)},
        {p.buffer_header, 2 * sizeof(MoeCallHeader)},
        {p.buffer_counts, int64_t{c.num_experts} * c.blocks * 4},
        {p.buffer_topk, entries},
        {p.buffer_slot, entries},
        {p.buffer_send_rows, entries},
        {p.buffer_rows, rows},
        {p.buffer_weights, entries},
    };
    std::sort(regions.begin(), regions.end());
    for (size_t i = 0; i < regions.size(); ++i) {
      EXPECT_EQ(regions[i].first % 128, 0) << i;
      const int64_t end = regions[i].first + regions[i].second;
      EXPECT_LE(end, i + 1 < regions.size() ? regions[i + 1].first : p.buffer_bytes) << i;
    }
  }
}

TEST(MoePlan, EveryValueOutOfRangeIsRefusedAndLeavesAZeroPlan) {
  struct Case {
    const char* what;
    void (*change)(ncclscope_moe_config*);
  };
  const Case cases[] = {
      {"1 rank", [](ncclscope_moe_config* c) { c->nranks = 1; }},
      {"9 ranks", [](ncclscope_moe_config* c) { c->nranks = 9; }},
      {"experts not a multiple of ranks", [](ncclscope_moe_config* c) { c->num_experts = 60; }},
      {"fewer experts than ranks", [](ncclscope_moe_config* c) { c->num_experts = 0; }},
      {"too many experts", [](ncclscope_moe_config* c) { c->num_experts = 1032; }},
      {"top_k 0", [](ncclscope_moe_config* c) { c->top_k = 0; }},
      {"top_k 33", [](ncclscope_moe_config* c) { c->top_k = 33; }},
      {"fp64", [](ncclscope_moe_config* c) { c->dtype = 8; }},
      {"hidden 0", [](ncclscope_moe_config* c) { c->hidden = 0; }},
      {"bf16 row of 12 bytes", [](ncclscope_moe_config* c) { c->hidden = 6; }},
      {"max_tokens 0", [](ncclscope_moe_config* c) { c->max_tokens = 0; }},
      {"rows past int32", [](ncclscope_moe_config* c) { c->max_tokens = 1 << 26; }},
      {"negative capacity", [](ncclscope_moe_config* c) { c->recv_capacity = -1; }},
      {"65 blocks", [](ncclscope_moe_config* c) { c->blocks = 65; }},
      {"negative blocks", [](ncclscope_moe_config* c) { c->blocks = -2; }},
      {"32 threads", [](ncclscope_moe_config* c) { c->threads = 32; }},
      {"100 threads", [](ncclscope_moe_config* c) { c->threads = 100; }},
      {"2048 threads", [](ncclscope_moe_config* c) { c->threads = 2048; }},
      {"combine mode 2", [](ncclscope_moe_config* c) { c->combine = 2; }},
      {"negative combine mode", [](ncclscope_moe_config* c) { c->combine = -1; }},
  };
  for (const Case& k : cases) {
    ncclscope_moe_config c = PlanConfig();
    k.change(&c);
    ncclscope_moe_plan p;
    p.buffer_bytes = 99;
    EXPECT_EQ(ncclscope_moe_plan_make(&c, &p), NCCLSCOPE_MOE_INVALID_ARGUMENT) << k.what;
    EXPECT_EQ(p.buffer_bytes, 0) << k.what;
  }
  const ncclscope_moe_config c = PlanConfig();
  ncclscope_moe_plan p;
  EXPECT_EQ(ncclscope_moe_plan_make(nullptr, &p), NCCLSCOPE_MOE_INVALID_ARGUMENT);
  EXPECT_EQ(ncclscope_moe_plan_make(&c, nullptr), NCCLSCOPE_MOE_INVALID_ARGUMENT);
}

TEST(MoePlan, Fp32RowsOfOnePackAndTheSmallestShapesAreAccepted) {
  ncclscope_moe_config c{};
  c.nranks = 2;
  c.num_experts = 2;
  c.top_k = 1;
  c.hidden = 4;
  c.dtype = NCCLSCOPE_MOE_FP32;
  c.max_tokens = 1;
  c.blocks = 1;
  c.threads = 64;
  ncclscope_moe_plan p;
  ASSERT_EQ(ncclscope_moe_plan_make(&c, &p), NCCLSCOPE_MOE_OK);
  EXPECT_EQ(p.row_bytes, 16);
  EXPECT_EQ(p.config.recv_capacity, 2);
}

TEST(MoePlan, EveryResultHasItsOwnText) {
  std::set<std::string> texts;
  for (int32_t r = NCCLSCOPE_MOE_OK; r <= NCCLSCOPE_MOE_STALE_EPOCH; ++r) {
    texts.insert(ncclscope_moe_result_string(r));
  }
  EXPECT_EQ(texts.size(), 8u);
  EXPECT_EQ(std::string(ncclscope_moe_result_string(42)), "unknown result");
  EXPECT_EQ(std::string(ncclscope_moe_result_string(NCCLSCOPE_MOE_RECV_OVERFLOW)),
            "more rows than recv_capacity");
}

}  // namespace
}  // namespace ncclscope::collectives
