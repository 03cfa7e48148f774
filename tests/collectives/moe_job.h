// A node's MoE dispatch/combine in one process for the twin tests: every rank's registered buffer
// (zeroed, 128-byte aligned, as a framework allocates it), its tokens, routing and weights, and
// the outputs of its calls; each call runs every rank on its own thread through the C API
// (ncclscope_moe_dispatch_on_cpu / _combine_on_cpu), as the emulator's rank processes would.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/moe/moe_buffer.h"
#include "collectives/moe/moe_elements.h"
#include "collectives/twins/narrow_float.h"

namespace ncclscope::collectives::moe_test {

inline constexpr uint64_t kSecond = 1'000'000'000;

struct FreeAligned {
  void operator()(unsigned char* p) const { std::free(p); }
};

// One rank's side of one dispatch and the combine that returns its rows.
struct RankCall {
  int32_t tokens = 0;
  std::vector<unsigned char> x;
  std::vector<int32_t> topk;
  std::vector<float> weights;
  // dispatch's outputs, poisoned before the call
  std::vector<unsigned char> recv_x;
  std::vector<ncclscope_moe_source> recv_src;
  std::vector<int32_t> recv_counts, send_rows;
  ncclscope_moe_status dispatch_status{-1, -1, -1};
  ncclscope_moe_result dispatch_result = NCCLSCOPE_MOE_INVALID_ARGUMENT;
  // combine's
  std::vector<unsigned char> expert_out, out;
  ncclscope_moe_status combine_status{-1, -1, -1};
  ncclscope_moe_result combine_result = NCCLSCOPE_MOE_INVALID_ARGUMENT;
  ncclscope_moe_stall stall{};
};

// Rows are read and written as the twin does.
using collectives::LoadMoeElement;
using collectives::StoreMoeElement;

class MoeJob {
 public:
  ncclscope_moe_plan plan{};
  int nranks = 0;
  uint32_t epoch = 1;
  // The calls' args ask for NCCLSCOPE_MOE_DEVICE_EPOCH and carry a stale epoch: what a captured
  // CUDA graph replays.
  bool device_epoch = false;
  // Changes rank r's common arguments of every call after they are filled (a test's one rank that
  // behaves differently).
  std::function<void(int r, ncclscope_moe_common_args*)> adjust;

  // first_epoch other than 1: the flags start where a communicator's earlier calls left them.
  explicit MoeJob(const ncclscope_moe_config& config, uint32_t first_epoch = 1)
      : epoch(first_epoch) {
    if (ncclscope_moe_plan_make(&config, &plan) != NCCLSCOPE_MOE_OK) std::abort();
    nranks = plan.config.nranks;
    const size_t bytes = static_cast<size_t>(plan.buffer_bytes);
    for (int r = 0; r < nranks; ++r) {
      buffers_.emplace_back(static_cast<unsigned char*>(std::aligned_alloc(128, bytes)));
      std::memset(buffers_.back().get(), 0, bytes);
      const MoeBuffer m{buffers_.back().get(), &plan};
      *m.last_epoch() = first_epoch - 1;
      Signal* s = m.signal();
      for (uint32_t b = 0; b < kMaxBlocks; ++b) {
        for (int q = 0; q < kMaxRanks; ++q) {
          for (Barrier k : {Barrier::kStart, Barrier::kMiddle, Barrier::kEnd}) {
            *FlagOf(s, b, k, q) = first_epoch - 1;
          }
        }
      }
    }
  }

  int64_t Row() const { return plan.row_bytes; }
  // The epoch rank r's last call left in its buffer.
  uint32_t LastEpoch(int r) const {
    return *MoeBuffer{buffers_[static_cast<size_t>(r)].get(), &plan}.last_epoch();
  }
  int32_t K() const { return plan.config.top_k; }
  int32_t Dtype() const { return plan.config.dtype; }

  // Tokens with random values in [-2, 2) and random routing: roll < unused_pct gives -1, else an
  // expert drawn by `expert`.
  template <typename Expert>
  RankCall Tokens(int32_t tokens, std::mt19937* gen, int unused_pct, Expert expert) const {
    RankCall c;
    c.tokens = tokens;
    c.x.resize(static_cast<size_t>(tokens * Row()));
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    for (int32_t t = 0; t < tokens; ++t) {
      for (int32_t h = 0; h < plan.config.hidden; ++h) {
        StoreMoeElement(Dtype(), c.x.data() + t * Row(), h, value(*gen));
      }
    }
    c.topk.resize(static_cast<size_t>(tokens) * static_cast<size_t>(K()));
    for (int32_t& e : c.topk) e = static_cast<int>((*gen)() % 100) < unused_pct ? -1 : expert(gen);
    c.weights.resize(c.topk.size());
    for (float& w : c.weights) w = value(*gen);
    return c;
  }

  ncclscope_moe_common_args Common(int r, int32_t tokens, uint32_t e, ncclscope_moe_status* status,
                                   ncclscope_moe_stall* stall, uint64_t timeout_ns) const {
    ncclscope_moe_common_args a{};
    a.plan = plan;
    for (int q = 0; q < nranks; ++q) a.buffer[q] = buffers_[q].get();
    a.status = status;
    a.stall = stall;
    a.timeout_ns = timeout_ns;
    a.rank = r;
    a.epoch = device_epoch ? 0xDEADBEEFu : e;
    a.flags = device_epoch ? NCCLSCOPE_MOE_DEVICE_EPOCH : 0;
    a.num_tokens = tokens;
    if (adjust) adjust(r, &a);
    return a;
  }

  // One dispatch on every rank but `absent`, each on its own thread; outputs poisoned first.
  void Dispatch(std::vector<RankCall>* calls, int absent = -1, uint64_t timeout = 60 * kSecond) {
    const uint32_t e = epoch++;
    const size_t capacity = static_cast<size_t>(plan.config.recv_capacity);
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      RankCall& c = (*calls)[static_cast<size_t>(r)];
      c.recv_x.assign(capacity * static_cast<size_t>(Row()), 0xA5);
      c.recv_src.assign(capacity, ncclscope_moe_source{-7, -7, -7});
      c.recv_counts.assign(static_cast<size_t>(plan.local_experts), -7);
      c.send_rows.assign(c.topk.size(), -7);
      if (r == absent) continue;
      threads.emplace_back([this, &c, r, e, timeout] {
        ncclscope_moe_dispatch_args a{};
        a.common = Common(r, c.tokens, e, &c.dispatch_status, &c.stall, timeout);
        a.x = c.x.data();
        a.topk_idx = c.topk.data();
        a.recv_x = c.recv_x.data();
        a.recv_src = c.recv_src.data();
        a.recv_counts = c.recv_counts.data();
        a.send_rows = c.send_rows.data();
        c.dispatch_result = ncclscope_moe_dispatch_on_cpu(&a);
      });
    }
    for (std::thread& t : threads) t.join();
  }

  // One combine of the rows of an earlier dispatch on every rank; expert_out must be set.
  void Combine(std::vector<RankCall>* calls, int absent = -1, uint64_t timeout = 60 * kSecond) {
    const uint32_t e = epoch++;
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      RankCall& c = (*calls)[static_cast<size_t>(r)];
      c.out.assign(static_cast<size_t>(c.tokens * Row()), 0xA5);
      if (r == absent) continue;
      threads.emplace_back([this, &c, r, e, timeout] {
        ncclscope_moe_combine_args a{};
        a.common = Common(r, c.tokens, e, &c.combine_status, &c.stall, timeout);
        a.expert_out = c.expert_out.data();
        a.recv_counts = c.recv_counts.data();
        a.topk_idx = c.topk.data();
        a.send_rows = c.send_rows.data();
        a.topk_weights = c.weights.data();
        a.out = c.out.data();
        c.combine_result = ncclscope_moe_combine_on_cpu(&a);
      });
    }
    for (std::thread& t : threads) t.join();
  }

  // Rank r's rows in the reference order: (local expert, source rank, token, k) of every entry
  // routed to its experts.
  std::vector<std::tuple<int32_t, int, int32_t, int32_t>> Reference(
      const std::vector<RankCall>& calls, int r) const {
    const int32_t local = plan.local_experts;
    std::vector<std::tuple<int32_t, int, int32_t, int32_t>> order;
    for (int p = 0; p < nranks; ++p) {
      const RankCall& c = calls[static_cast<size_t>(p)];
      for (size_t j = 0; j < c.topk.size(); ++j) {
        const int32_t e = c.topk[j];
        if (e >= r * local && e < (r + 1) * local) {
          order.emplace_back(e - r * local, p, static_cast<int32_t>(j) / K(),
                             static_cast<int32_t>(j) % K());
        }
      }
    }
    std::sort(order.begin(), order.end());
    return order;
  }

  // What combine gives token t of rank p when expert outputs are scale(k) x the token's row:
  // the fused multiply-adds in k order from 0, rounded once.
  template <typename Scale>
  std::vector<unsigned char> ReferenceCombine(const RankCall& c, Scale scale) const {
    std::vector<unsigned char> out(c.x.size());
    for (int32_t t = 0; t < c.tokens; ++t) {
      for (int32_t h = 0; h < plan.config.hidden; ++h) {
        float acc = 0.0f;
        for (int32_t k = 0; k < K(); ++k) {
          const size_t j =
              static_cast<size_t>(t) * static_cast<size_t>(K()) + static_cast<size_t>(k);
          const int32_t e = c.topk[j];
          if (e < 0 || e >= plan.config.num_experts) continue;
          // The expert's output is stored in the data type before combine reads it.
          unsigned char y_bytes[4];
          StoreMoeElement(Dtype(), y_bytes, 0,
                          scale(k, LoadMoeElement(Dtype(), c.x.data() + t * Row(), h)));
          const float y = LoadMoeElement(Dtype(), y_bytes, 0);
          acc = std::fma(c.weights[j], y, acc);
        }
        StoreMoeElement(Dtype(), out.data() + t * Row(), h, acc);
      }
    }
    return out;
  }

  // The same under NCCLSCOPE_MOE_COMBINE_RANK_SUMS, from the API's words: each expert rank's sum
  // of the token's slots there (fused multiply-adds in k order from 0) rounded to the data type,
  // those sums added in the order of their ranks' first slots (float32, from 0), rounded again.
  template <typename Scale>
  std::vector<unsigned char> ReferenceRankSums(const RankCall& c, Scale scale) const {
    std::vector<unsigned char> out(c.x.size());
    const int32_t experts = plan.config.num_experts, local = plan.local_experts;
    for (int32_t t = 0; t < c.tokens; ++t) {
      std::vector<int> order;  // ranks by first slot
      for (int32_t k = 0; k < K(); ++k) {
        const int32_t e =
            c.topk[static_cast<size_t>(t) * static_cast<size_t>(K()) + static_cast<size_t>(k)];
        if (e < 0 || e >= experts) continue;
        if (std::find(order.begin(), order.end(), e / local) == order.end()) {
          order.push_back(e / local);
        }
      }
      for (int32_t h = 0; h < plan.config.hidden; ++h) {
        float total = 0.0f;
        for (const int q : order) {
          float sum = 0.0f;
          for (int32_t k = 0; k < K(); ++k) {
            const size_t j =
                static_cast<size_t>(t) * static_cast<size_t>(K()) + static_cast<size_t>(k);
            const int32_t e = c.topk[j];
            if (e < 0 || e >= experts || e / local != q) continue;
            unsigned char y_bytes[4];
            StoreMoeElement(Dtype(), y_bytes, 0,
                            scale(k, LoadMoeElement(Dtype(), c.x.data() + t * Row(), h)));
            sum = std::fma(c.weights[j], LoadMoeElement(Dtype(), y_bytes, 0), sum);
          }
          unsigned char s_bytes[4];
          StoreMoeElement(Dtype(), s_bytes, 0, sum);
          total += LoadMoeElement(Dtype(), s_bytes, 0);
        }
        StoreMoeElement(Dtype(), out.data() + t * Row(), h, total);
      }
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<unsigned char, FreeAligned>> buffers_;
};

}  // namespace ncclscope::collectives::moe_test
