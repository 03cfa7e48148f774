#include "collectives/gpu_check/moe_cases.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "collectives/gpu_check/splitmix.h"
#include "collectives/twins/narrow_float.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

using Random = SplitMix64;

// Random sign and mantissa, magnitude in [2^-6, 2^3): every bit pattern of the type in that range.
float Value(uint64_t r) {
  const uint32_t exponent = 121 + static_cast<uint32_t>((r >> 32) % 9);
  const uint32_t bits = (static_cast<uint32_t>(r >> 63) << 31) | (exponent << 23) |
                        (static_cast<uint32_t>(r) & 0x7FFFFFu);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int32_t Expert(const MoeShape& s, Random& rng) {
  if (s.routing == MoeRouting::kSkewed && rng.Below(2) == 0) return 0;
  return static_cast<int32_t>(rng.Below(static_cast<uint32_t>(s.num_experts)));
}

Case MoeCase(int nranks, nc::Dtype d, int hidden, int top_k, int experts, int tokens,
             MoeRouting routing, int unused_pct, bool all_tokens, int reps) {
  Case c;
  c.op = Op::kMoeDispatch;
  c.dtype = d;
  c.nranks = nranks;
  c.threads = 0;
  c.reps = reps;
  c.moe.hidden = hidden;
  c.moe.top_k = top_k;
  c.moe.num_experts = experts;
  c.moe.max_tokens = tokens;
  c.moe.routing = routing;
  c.moe.unused_pct = unused_pct;
  c.moe.all_tokens = all_tokens;
  return c;
}

}  // namespace

std::vector<Case> BuildMoeCases(int nranks, bool largest, const CaseLimits& limits) {
  const int deepseek_experts = kDeepSeekExperts / nranks * nranks;
  std::vector<Case> cases;
  for (nc::Dtype d : {nc::Dtype::kFp32, nc::Dtype::kFp16, nc::Dtype::kBf16}) {
    cases.push_back(
        MoeCase(nranks, d, 128, 1, 2 * nranks, 48, MoeRouting::kUniform, 10, false, limits.reps));
    cases.push_back(
        MoeCase(nranks, d, 128, 8, 4 * nranks, 64, MoeRouting::kSkewed, 10, false, limits.reps));
    cases.push_back(cases.back());  // and combine's rank sums
    cases.back().moe.combine = NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
    cases.push_back(MoeCase(nranks, d, kDeepSeekHidden, kDeepSeekTopK, deepseek_experts, 16,
                            MoeRouting::kDistinct, 5, false, limits.reps));
  }
  // The low-latency shape is cheap on the host (1024 rows a rank): it gets every run.
  cases.push_back(MoeCase(nranks, nc::Dtype::kBf16, kDeepSeekHidden, kDeepSeekTopK,
                          deepseek_experts, kLowLatencyTokens, MoeRouting::kDistinct, 0, true,
                          limits.reps));
  cases.push_back(cases.back());
  cases.back().moe.combine = NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
  if (largest) {
    Case c = MoeCase(nranks, nc::Dtype::kBf16, kDeepSeekHidden, kDeepSeekTopK, deepseek_experts,
                     kHighThroughputTokens, MoeRouting::kDistinct, 0, true, limits.big_reps);
    // A rank receives tokens x top_k rows on average; the worst case (nranks times that) would
    // take 3.8 GB a rank on the device and as much for the twin on the host.
    c.moe.recv_capacity = kHighThroughputTokens * kDeepSeekTopK * 5 / 4;
    cases.push_back(c);
    c.moe.combine = NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
    cases.push_back(c);
  }
  std::vector<Case> fit;
  for (const Case& c : cases) {
    const size_t rows = static_cast<size_t>(c.moe.max_tokens) * static_cast<size_t>(c.moe.hidden) *
                        nc::DtypeBytes(c.dtype);
    if (rows <= limits.max_bytes) fit.push_back(c);
  }
  return fit;
}

ncclscope_moe_config MoeConfig(const Case& c, int blocks) {
  ncclscope_moe_config m{};
  m.nranks = c.nranks;
  m.num_experts = c.moe.num_experts;
  m.top_k = c.moe.top_k;
  m.hidden = c.moe.hidden;
  m.dtype = static_cast<int32_t>(c.dtype);
  m.max_tokens = c.moe.max_tokens;
  m.recv_capacity = c.moe.recv_capacity;
  m.blocks = blocks;
  m.combine = c.moe.combine;
  return m;
}

MoeRankInput MakeMoeInput(const Case& c, uint64_t seed, size_t case_index, int rep, int rank) {
  const MoeShape& s = c.moe;
  Random rng{seed * 0x100000001B3ull ^ 0x4D6F45ull ^ (case_index << 40) ^
             (static_cast<uint64_t>(rep) << 16) ^ static_cast<uint64_t>(rank)};
  rng.Next();
  MoeRankInput in;
  in.tokens = s.all_tokens ? s.max_tokens
              : rank == 1
                  ? 0
                  : 1 + static_cast<int32_t>(rng.Below(static_cast<uint32_t>(s.max_tokens)));
  const auto dtype = static_cast<int32_t>(c.dtype);
  const int64_t row = int64_t{s.hidden} * static_cast<int64_t>(nc::DtypeBytes(c.dtype));
  in.x.resize(static_cast<size_t>(in.tokens * row));
  for (int32_t t = 0; t < in.tokens; ++t) {
    for (int h = 0; h < s.hidden; ++h)
      StoreMoeElement(dtype, in.x.data() + t * row, h, Value(rng.Next()));
  }
  const size_t entries = static_cast<size_t>(in.tokens) * static_cast<size_t>(s.top_k);
  in.topk.resize(entries);
  std::vector<int32_t> experts(static_cast<size_t>(s.num_experts));
  for (int32_t t = 0; t < in.tokens; ++t) {
    int32_t* slots = in.topk.data() + static_cast<size_t>(t) * static_cast<size_t>(s.top_k);
    if (s.routing == MoeRouting::kDistinct) {
      // The first top_k of a partial Fisher-Yates shuffle: distinct experts in random order.
      std::iota(experts.begin(), experts.end(), 0);
      for (int k = 0; k < s.top_k; ++k) {
        const auto pick =
            static_cast<size_t>(k) + rng.Below(static_cast<uint32_t>(s.num_experts - k));
        std::swap(experts[static_cast<size_t>(k)], experts[pick]);
        slots[k] = experts[static_cast<size_t>(k)];
      }
    } else {
      for (int k = 0; k < s.top_k; ++k) slots[k] = Expert(s, rng);
    }
    for (int k = 0; k < s.top_k; ++k) {
      if (static_cast<int>(rng.Below(100)) < s.unused_pct) slots[k] = -1;
    }
  }
  in.weights.resize(entries);
  for (float& w : in.weights) {
    w = static_cast<float>(static_cast<double>(rng.Next() >> 11) * 0x1.0p-52 - 1.0);
  }
  return in;
}

void ApplyExperts(const ncclscope_moe_plan& plan, const unsigned char* recv_x,
                  const int32_t* recv_counts, unsigned char* expert_out) {
  const int32_t dtype = plan.config.dtype;
  int64_t row = 0;
  for (int32_t e = 0; e < plan.local_experts; ++e) {
    const float scale = 1.0f + static_cast<float>(e % 4) * 0.25f;
    for (int32_t i = 0; i < recv_counts[e]; ++i, ++row) {
      const unsigned char* from = recv_x + row * plan.row_bytes;
      unsigned char* to = expert_out + row * plan.row_bytes;
      for (int32_t h = 0; h < plan.config.hidden; ++h) {
        StoreMoeElement(dtype, to, h, LoadMoeElement(dtype, from, h) * scale - 0.125f);
      }
    }
  }
}

MoeTraffic CountTraffic(const Case& c, const std::vector<MoeRankInput>& in) {
  const MoeShape& s = c.moe;
  const int local = s.num_experts / c.nranks;
  double tokens = 0, unique = 0, entries = 0;
  for (const MoeRankInput& r : in) {
    tokens += r.tokens;
    for (int32_t t = 0; t < r.tokens; ++t) {
      uint32_t ranks = 0;  // destination ranks of the token, as bits
      for (int k = 0; k < s.top_k; ++k) {
        const int32_t e =
            r.topk[static_cast<size_t>(t) * static_cast<size_t>(s.top_k) + static_cast<size_t>(k)];
        if (e < 0 || e >= s.num_experts) continue;
        ranks |= 1u << (e / local);
        ++entries;
      }
      unique += __builtin_popcount(ranks);
    }
  }
  const double row =
      static_cast<double>(s.hidden) * static_cast<double>(nc::DtypeBytes(c.dtype)) / c.nranks;
  MoeTraffic m;
  m.logical = unique * row;
  m.dispatch_device = (2 * tokens + unique + entries) * row;
  // Rank sums: the expert side reads its rows where they are and writes one sum per (token, rank)
  // pair (U), the token's rank reads those and writes its tokens.
  m.combine_device = c.moe.combine == NCCLSCOPE_MOE_COMBINE_RANK_SUMS
                         ? (entries + 2 * unique + tokens) * row
                         : (3 * entries + tokens) * row;
  return m;
}

}  // namespace ncclscope::gpu_check
