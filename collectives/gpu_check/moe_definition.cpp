#include "collectives/gpu_check/moe_definition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

namespace ncclscope::gpu_check {
namespace {

std::string Who(int r) {
  return "the CPU twin against the API's definition, rank " + std::to_string(r) + ": ";
}

bool Used(int32_t e, const ncclscope_moe_plan& p) {
  return e >= 0 && e < p.config.num_experts;
}

}  // namespace

std::string DispatchAgainstDefinition(const ncclscope_moe_plan& p,
                                      const std::vector<MoeRankInput>& in,
                                      const std::vector<MoeRankOutput>& want, int r) {
  const int32_t local = p.local_experts, k_slots = p.config.top_k;
  const auto row_bytes = static_cast<size_t>(p.row_bytes);
  // (local expert, source rank, token, slot) of every entry routed to r's experts.
  std::vector<std::tuple<int32_t, int, int32_t, int32_t>> order;
  for (size_t q = 0; q < in.size(); ++q) {
    const std::vector<int32_t>& topk = in[q].topk;
    for (size_t j = 0; j < topk.size(); ++j) {
      if (!Used(topk[j], p) || topk[j] / local != r) continue;
      order.emplace_back(topk[j] % local, static_cast<int>(q), static_cast<int32_t>(j) / k_slots,
                         static_cast<int32_t>(j) % k_slots);
    }
  }
  std::sort(order.begin(), order.end());
  const MoeRankOutput& w = want[static_cast<size_t>(r)];
  std::vector<int32_t> counts(static_cast<size_t>(local), 0);
  for (const auto& entry : order) ++counts[static_cast<size_t>(std::get<0>(entry))];
  for (size_t e = 0; e < counts.size(); ++e) {
    if (w.recv_counts[e] != counts[e]) {
      return Who(r) + "recv_counts[" + std::to_string(e) + "] is " +
             std::to_string(w.recv_counts[e]) + ", the definition's " + std::to_string(counts[e]);
    }
  }
  char line[256];
  for (size_t i = 0; i < order.size(); ++i) {
    const auto [e, q, t, k] = order[i];
    const ncclscope_moe_source& s = w.recv_src[i];
    if (s.rank != q || s.token != t || s.k != k) {
      std::snprintf(line, sizeof(line),
                    "recv_src[%zu] is {rank %d, token %d, slot %d}, the definition's {rank %d, "
                    "token %d, slot %d}",
                    i, s.rank, s.token, s.k, q, t, k);
      return Who(r) + line;
    }
    const unsigned char* sent = in[static_cast<size_t>(q)].x.data() + row_bytes * t;
    if (std::memcmp(w.recv_x.data() + row_bytes * i, sent, row_bytes) != 0) {
      std::snprintf(line, sizeof(line), "recv_x row %zu is not rank %d's token %d", i, q, t);
      return Who(r) + line;
    }
    const int32_t told = want[static_cast<size_t>(q)]
                             .send_rows[static_cast<size_t>(t) * static_cast<size_t>(k_slots) +
                                        static_cast<size_t>(k)];
    if (told != static_cast<int32_t>(i)) {
      std::snprintf(line, sizeof(line),
                    "rank %d's send_rows for token %d, slot %d is %d, the definition's %zu", q, t,
                    k, told, i);
      return Who(r) + line;
    }
  }
  const std::vector<int32_t>& topk = in[static_cast<size_t>(r)].topk;
  for (size_t j = 0; j < topk.size(); ++j) {
    if (!Used(topk[j], p) && w.send_rows[j] != -1) {
      return Who(r) + "send_rows[" + std::to_string(j) + "] of an unused slot is " +
             std::to_string(w.send_rows[j]) + ", not -1";
    }
  }
  return "";
}

std::string CombineAgainstDefinition(const ncclscope_moe_plan& p,
                                     const std::vector<MoeRankInput>& in,
                                     const std::vector<std::vector<unsigned char>>& expert_out,
                                     const std::vector<MoeRankOutput>& want, int r) {
  const int32_t local = p.local_experts, k_slots = p.config.top_k, hidden = p.config.hidden;
  const int32_t dtype = p.config.dtype;
  const auto row_bytes = static_cast<size_t>(p.row_bytes);
  const MoeRankInput& mine = in[static_cast<size_t>(r)];
  const MoeRankOutput& w = want[static_cast<size_t>(r)];
  const bool sums = p.config.combine == NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
  std::vector<float> acc(static_cast<size_t>(hidden)), sum(static_cast<size_t>(hidden));
  std::vector<unsigned char> row(row_bytes);
  // Slot j's weighted expert row into into[h] (fused multiply-add).
  auto add_slot = [&](size_t j, std::vector<float>& into) {
    const unsigned char* y = expert_out[static_cast<size_t>(mine.topk[j] / local)].data() +
                             row_bytes * static_cast<size_t>(w.send_rows[j]);
    for (int32_t h = 0; h < hidden; ++h) {
      into[static_cast<size_t>(h)] =
          std::fma(mine.weights[j], LoadMoeElement(dtype, y, h), into[static_cast<size_t>(h)]);
    }
  };
  for (int32_t t = 0; t < mine.tokens; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    const size_t first = static_cast<size_t>(t) * static_cast<size_t>(k_slots);
    if (!sums) {  // every used slot in k order, rounded once
      for (int32_t k = 0; k < k_slots; ++k) {
        if (Used(mine.topk[first + static_cast<size_t>(k)], p)) {
          add_slot(first + static_cast<size_t>(k), acc);
        }
      }
    }
    // Rank sums: per expert rank, in the order of its first slot, its slots in k order rounded to
    // the type, added into acc.
    std::vector<int32_t> ranks;
    for (int32_t k = 0; sums && k < k_slots; ++k) {
      const int32_t e = mine.topk[first + static_cast<size_t>(k)];
      if (Used(e, p) && std::find(ranks.begin(), ranks.end(), e / local) == ranks.end()) {
        ranks.push_back(e / local);
      }
    }
    for (const int32_t q : ranks) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int32_t k = 0; k < k_slots; ++k) {
        const int32_t e = mine.topk[first + static_cast<size_t>(k)];
        if (Used(e, p) && e / local == q) add_slot(first + static_cast<size_t>(k), sum);
      }
      unsigned char rounded[4];
      for (int32_t h = 0; h < hidden; ++h) {
        StoreMoeElement(dtype, rounded, 0, sum[static_cast<size_t>(h)]);
        acc[static_cast<size_t>(h)] += LoadMoeElement(dtype, rounded, 0);
      }
    }
    for (int32_t h = 0; h < hidden; ++h)
      StoreMoeElement(dtype, row.data(), h, acc[static_cast<size_t>(h)]);
    const unsigned char* got = w.out.data() + row_bytes * static_cast<size_t>(t);
    if (std::memcmp(got, row.data(), row_bytes) == 0) continue;
    size_t i = 0;
    while (got[i] == row[i]) ++i;
    char line[200];
    std::snprintf(line, sizeof(line),
                  "out byte %zu (token %d, element %zu) is 0x%02x, the definition's 0x%02x",
                  row_bytes * static_cast<size_t>(t) + i, t,
                  i / static_cast<size_t>(p.element_bytes), got[i], row[i]);
    return Who(r) + line;
  }
  return "";
}

}  // namespace ncclscope::gpu_check
