#include "collectives/gpu_check/exchange_group.h"

#include <algorithm>
#include <random>

#include "collectives/planner/tuning_table.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

// A misplaced part starts this far past a 16-byte boundary: a 2-byte element's split offset.
constexpr size_t kSkew = 2;
// What placing parts costs at most beyond their bytes: alignment up to 16 plus the skew.
constexpr size_t kPlacementSlack = 32;

const nc::ExchangeTuningRow* Row(nc::GpuClass gpu, int nranks) {
  return nc::FindExchangeTuning(gpu == nc::GpuClass::kUnknown ? nc::GpuClass::kHopper : gpu,
                                nranks);
}

// [s][d] bytes of a pattern. Sizes are whole packs; the index formulas leave some pairs empty
// (pair 0 -> 0 always) and give every rank count a mix of the sizes.
std::vector<std::vector<size_t>> PairBytes(ExchangePattern p, int n, size_t chunk) {
  std::vector<std::vector<size_t>> b(static_cast<size_t>(n), std::vector<size_t>(n, 0));
  const size_t small[] = {0,     nc::kPackBytes,       37 * nc::kPackBytes, chunk - nc::kPackBytes,
                          chunk, 1000 * nc::kPackBytes};
  const size_t large[] = {0, chunk + 5 * nc::kPackBytes, 3 * chunk - nc::kPackBytes, 2 * chunk,
                          3 * chunk + 123 * nc::kPackBytes};
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      size_t& v = b[static_cast<size_t>(s)][static_cast<size_t>(d)];
      switch (p) {
        case ExchangePattern::kPipeline:
          v = d == s + 1 ? 2 * chunk + 37 * nc::kPackBytes
                         : 0;  // stage s's activations to stage s + 1
          break;
        case ExchangePattern::kSmall:
          v = small[(3 * s + 5 * d + s * d) % 6];
          break;
        case ExchangePattern::kLarge:
          v = large[(s + 2 * d + s * d) % 5];
          break;
      }
    }
  }
  return b;
}

size_t Total(const std::vector<size_t>& v) {
  size_t t = 0;
  for (size_t x : v) t += x;
  return t;
}

// Rank r's operations (in the order `order` gives them), their places, its plan.
bool MakeRank(const ExchangeGroup& g, int r, nc::GpuClass gpu, size_t staging_bytes,
              std::mt19937_64* order, ExchangeRank* out, std::string* error) {
  const int n = g.nranks;
  for (int q = 0; q < n; ++q) {
    const size_t to = g.bytes[static_cast<size_t>(r)][static_cast<size_t>(q)];
    const size_t from = g.bytes[static_cast<size_t>(q)][static_cast<size_t>(r)];
    if (to > 0) out->ops.push_back(nc::ExchangeOp{q, true, to});
    if (from > 0) out->ops.push_back(nc::ExchangeOp{q, false, from});
  }
  if (order != nullptr) std::shuffle(out->ops.begin(), out->ops.end(), *order);
  size_t send_end = 0, recv_end = 0;
  for (size_t i = 0; i < out->ops.size(); ++i) {
    size_t& end = out->ops[i].send ? send_end : recv_end;
    const size_t at =
        (end + nc::kPackBytes - 1) / nc::kPackBytes * nc::kPackBytes + (i % 3 == 1 ? kSkew : 0);
    out->offset.push_back(at);
    end = at + out->ops[i].bytes;
  }
  out->send_extent = send_end;
  out->recv_extent = recv_end;
  nc::ExchangeCall call;
  call.ops = out->ops.data();
  call.nops = out->ops.size();
  call.rank = r;
  call.nranks = n;
  call.single_node = true;
  call.peers_reachable = true;
  call.gpu = gpu == nc::GpuClass::kUnknown ? nc::GpuClass::kHopper : gpu;
  call.buffer_bytes = staging_bytes;
  out->plan = nc::PlanExchange(call);
  if (out->plan.nparts == call.nops) return true;
  char why[192];
  nc::ExplainExchangePlan(out->plan, call, why, sizeof(why));
  *error = "rank " + std::to_string(r) + ": the planner did not take all " +
           std::to_string(call.nops) + " operations: " + why;
  return false;
}

bool MakeGroup(nc::GpuClass gpu, int nranks, size_t staging_bytes, uint64_t seed, ExchangeGroup* g,
               std::string* error) {
  g->nranks = nranks;
  g->rank.assign(static_cast<size_t>(nranks), ExchangeRank{});
  for (int r = 0; r < nranks; ++r) {
    std::mt19937_64 order(seed ^ (static_cast<uint64_t>(nranks) << 32) ^
                          (static_cast<uint64_t>(r) << 8));
    if (!MakeRank(*g, r, gpu, staging_bytes, &order, &g->rank[static_cast<size_t>(r)], error)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<Case> BuildExchangeCases(nc::GpuClass gpu, int nranks, const CaseLimits& limits) {
  std::vector<Case> cases;
  const nc::ExchangeTuningRow* row = Row(gpu, nranks);
  if (row == nullptr) return cases;
  for (ExchangePattern p :
       {ExchangePattern::kPipeline, ExchangePattern::kSmall, ExchangePattern::kLarge}) {
    size_t total = 0;
    for (const auto& from : PairBytes(p, nranks, row->chunk_bytes)) total += Total(from);
    Case c;
    c.op = Op::kExchange;
    c.algorithm = nc::Algorithm::kExchange;
    c.nranks = nranks;
    c.bytes = total / static_cast<size_t>(nranks);
    c.blocks = row->blocks_per_part;
    c.threads = row->threads;
    c.reps = c.bytes > limits.big_bytes ? limits.big_reps : limits.reps;
    c.pattern = p;
    cases.push_back(c);
  }
  return cases;
}

bool BuildExchangeGroup(const Case& c, nc::GpuClass gpu, size_t staging_bytes, uint64_t seed,
                        ExchangeGroup* g, std::string* error) {
  const nc::ExchangeTuningRow* row = Row(gpu, c.nranks);
  if (row == nullptr) {
    *error = "no exchange table row for " + std::to_string(c.nranks) + " ranks";
    return false;
  }
  g->bytes = PairBytes(c.pattern, c.nranks, row->chunk_bytes);
  return MakeGroup(gpu, c.nranks, staging_bytes,
                   seed * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(c.pattern), g, error);
}

bool BuildAbsentExchangeGroup(nc::GpuClass gpu, int nranks, int absent, size_t staging_bytes,
                              ExchangeGroup* g, std::string* error) {
  const nc::ExchangeTuningRow* row = Row(gpu, nranks);
  if (row == nullptr) {
    *error = "no exchange table row for " + std::to_string(nranks) + " ranks";
    return false;
  }
  g->bytes.assign(static_cast<size_t>(nranks), std::vector<size_t>(nranks, 0));
  for (int r = 0; r < nranks; ++r) {
    if (r == absent) continue;
    // Three chunks: the sender's third chunk waits for the absent rank to free the first (two
    // slots per destination: the second does not wait).
    const size_t bytes = nc::kExchangeSlotsPerPeer * row->chunk_bytes + nc::kPackBytes;
    g->bytes[static_cast<size_t>(r)][static_cast<size_t>(absent)] = bytes;
    g->bytes[static_cast<size_t>(absent)][static_cast<size_t>(r)] = bytes;
  }
  return MakeGroup(gpu, nranks, staging_bytes, 1, g, error);
}

size_t ExchangeBytesNeeded(nc::GpuClass gpu, int nranks) {
  const nc::ExchangeTuningRow* row = Row(gpu, nranks);
  if (row == nullptr) return 0;
  const size_t n = static_cast<size_t>(nranks);
  // the staging: two chunk slots per destination
  size_t need = n * nc::kExchangeSlotsPerPeer * row->chunk_bytes;
  for (ExchangePattern p :
       {ExchangePattern::kPipeline, ExchangePattern::kSmall, ExchangePattern::kLarge}) {
    const auto b = PairBytes(p, nranks, row->chunk_bytes);
    for (size_t r = 0; r < n; ++r) {
      size_t received = 0;
      for (size_t s = 0; s < n; ++s) received += b[s][r];
      need = std::max({need, Total(b[r]) + kPlacementSlack * n, received + kPlacementSlack * n});
    }
  }
  // The absent-rank group: the absent rank's peers' parts.
  return std::max(need, (n - 1) * (nc::kExchangeSlotsPerPeer * row->chunk_bytes + nc::kPackBytes) +
                            kPlacementSlack * n);
}

}  // namespace ncclscope::gpu_check
