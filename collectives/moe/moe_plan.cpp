// ncclscope_moe_plan_make and ncclscope_moe_result_string (include/ncclscope/moe.h): the checks of
// a MoE configuration, its defaults, and the layout of the registered buffer (moe_buffer.h). Pure.
#include <cstdint>
#include <cstring>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/moe/moe_buffer.h"

namespace {

namespace nc = ncclscope::collectives;

constexpr int32_t kDefaultBlocks = 32;
constexpr int32_t kDefaultThreads = 512;
// Regions start on 128 bytes: the flags' alignment, and whole 16-byte packs for the rows.
constexpr int64_t kRegionAlign = 128;

int32_t ElementBytes(int32_t dtype) {
  switch (dtype) {
    case NCCLSCOPE_MOE_FP16:
    case NCCLSCOPE_MOE_BF16:
      return 2;
    case NCCLSCOPE_MOE_FP32:
      return 4;
    default:
      return 0;
  }
}

// Fills the defaults; false for a value out of range.
bool Check(ncclscope_moe_config* c) {
  if (c->nranks < 2 || c->nranks > NCCLSCOPE_MOE_MAX_RANKS) return false;
  if (c->num_experts < c->nranks || c->num_experts > NCCLSCOPE_MOE_MAX_EXPERTS ||
      c->num_experts % c->nranks != 0) {
    return false;
  }
  if (c->top_k < 1 || c->top_k > NCCLSCOPE_MOE_MAX_TOP_K) return false;
  const int32_t element = ElementBytes(c->dtype);
  if (element == 0 || c->hidden < 1) return false;
  if ((int64_t{c->hidden} * element) % static_cast<int64_t>(nc::kPackBytes) != 0) return false;
  if (c->max_tokens < 1) return false;
  // Rows are numbered in int32 (send_rows, recv_src): the worst case must fit.
  const int64_t worst = int64_t{c->nranks} * c->max_tokens * c->top_k;
  if (worst > INT32_MAX) return false;
  if (c->recv_capacity < 0) return false;
  if (c->recv_capacity == 0) c->recv_capacity = static_cast<int32_t>(worst);
  if (c->blocks == 0) c->blocks = kDefaultBlocks;
  if (c->blocks < 1 || c->blocks > NCCLSCOPE_MOE_MAX_BLOCKS) return false;
  if (c->threads == 0) c->threads = kDefaultThreads;
  if (c->combine != NCCLSCOPE_MOE_COMBINE_EXACT && c->combine != NCCLSCOPE_MOE_COMBINE_RANK_SUMS) {
    return false;
  }
  return c->threads >= 64 && c->threads <= 1024 && c->threads % 32 == 0;
}

// Appends a region of `bytes` at the next aligned offset.
int64_t Place(int64_t* end, int64_t bytes) {
  const int64_t at = (*end + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
  *end = at + bytes;
  return at;
}

}  // namespace

extern "C" ncclscope_moe_result ncclscope_moe_plan_make(const ncclscope_moe_config* config,
                                                        ncclscope_moe_plan* plan) {
  if (plan == nullptr) return NCCLSCOPE_MOE_INVALID_ARGUMENT;
  std::memset(plan, 0, sizeof(*plan));
  if (config == nullptr) return NCCLSCOPE_MOE_INVALID_ARGUMENT;
  ncclscope_moe_config c = *config;
  if (!Check(&c)) return NCCLSCOPE_MOE_INVALID_ARGUMENT;
  ncclscope_moe_plan p{};
  p.config = c;
  p.local_experts = c.num_experts / c.nranks;
  p.element_bytes = ElementBytes(c.dtype);
  p.row_bytes = int64_t{c.hidden} * p.element_bytes;
  const int64_t entries = int64_t{c.max_tokens} * c.top_k;
  const int64_t row_count = c.max_tokens > c.recv_capacity ? c.max_tokens : c.recv_capacity;
  int64_t end = 0;
  p.buffer_signal = Place(&end, sizeof(nc::Signal));
  p.buffer_header = Place(&end, 2 * sizeof(nc::MoeCallHeader));
  p.buffer_counts = Place(&end, int64_t{c.num_experts} * c.blocks * 4);
  p.buffer_topk = Place(&end, entries * 4);
  p.buffer_slot = Place(&end, entries * 4);
  p.buffer_send_rows = Place(&end, entries * 4);
  p.buffer_rows = Place(&end, row_count * p.row_bytes);
  p.buffer_weights = Place(&end, entries * 4);
  p.buffer_epoch = Place(&end, 4);
  p.buffer_bytes = Place(&end, 0);
  *plan = p;
  return NCCLSCOPE_MOE_OK;
}

extern "C" const char* ncclscope_moe_result_string(int32_t result) {
  switch (result) {
    case NCCLSCOPE_MOE_OK:
      return "ok";
    case NCCLSCOPE_MOE_INVALID_ARGUMENT:
      return "invalid argument";
    case NCCLSCOPE_MOE_TOO_MANY_TOKENS:
      return "more tokens than max_tokens";
    case NCCLSCOPE_MOE_BAD_EXPERT:
      return "routing entry out of range";
    case NCCLSCOPE_MOE_RECV_OVERFLOW:
      return "more rows than recv_capacity";
    case NCCLSCOPE_MOE_BAD_HANDLE:
      return "combine handle not from a successful dispatch";
    case NCCLSCOPE_MOE_TIMEOUT:
      return "a peer never arrived";
    case NCCLSCOPE_MOE_STALE_EPOCH:
      return "epoch not the one after the buffer's last call";
    default:
      return "unknown result";
  }
}
