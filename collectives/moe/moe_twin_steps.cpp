#include "collectives/moe/moe_twin_steps.h"

#include <cstddef>
#include <cstring>

namespace ncclscope::collectives {

// The public stall record is the kernels' KernelStall under a C name.
static_assert(sizeof(ncclscope_moe_stall) == sizeof(KernelStall));
static_assert(offsetof(ncclscope_moe_stall, seen) == offsetof(KernelStall, seen));
static_assert(static_cast<uint32_t>(Barrier::kEnd) == 2);

namespace {

// Field by field: the plan has padding a copy need not keep.
bool SamePlan(const ncclscope_moe_plan& x, const ncclscope_moe_plan& y) {
  return std::memcmp(&x.config, &y.config, sizeof(x.config)) == 0 &&
         x.local_experts == y.local_experts && x.element_bytes == y.element_bytes &&
         x.row_bytes == y.row_bytes && x.buffer_bytes == y.buffer_bytes &&
         x.buffer_signal == y.buffer_signal && x.buffer_header == y.buffer_header &&
         x.buffer_counts == y.buffer_counts && x.buffer_topk == y.buffer_topk &&
         x.buffer_slot == y.buffer_slot && x.buffer_send_rows == y.buffer_send_rows &&
         x.buffer_rows == y.buffer_rows && x.buffer_weights == y.buffer_weights &&
         x.buffer_epoch == y.buffer_epoch;
}

}  // namespace

bool MoeArgsPlausible(const ncclscope_moe_common_args& a) noexcept {
  ncclscope_moe_plan fresh;
  if (ncclscope_moe_plan_make(&a.plan.config, &fresh) != NCCLSCOPE_MOE_OK) return false;
  if (!SamePlan(fresh, a.plan)) return false;
  if (a.rank < 0 || a.rank >= a.plan.config.nranks || a.status == nullptr) return false;
  if (a.flags != 0 && a.flags != NCCLSCOPE_MOE_DEVICE_EPOCH) return false;
  for (int q = 0; q < a.plan.config.nranks; ++q) {
    if (a.buffer[q] == nullptr || !Aligned(a.buffer[q], 128)) return false;
  }
  return true;
}

MoeTwinCall MoeTwinCallOf(const ncclscope_moe_common_args& a) noexcept {
  MoeTwinCall c{};
  c.args = &a;
  c.plan = &a.plan;
  c.rank = a.rank;
  c.nranks = a.plan.config.nranks;
  c.blocks = static_cast<uint32_t>(a.plan.config.blocks);
  for (int q = 0; q < c.nranks; ++q) {
    c.buffer[q] = MoeBuffer{static_cast<unsigned char*>(a.buffer[q]), &a.plan};
    c.signal[q] = c.buffer[q].signal();
  }
  // A timeout past a century is a century: the deadline must not wrap.
  constexpr uint64_t kCentury = 100ull * 365 * 24 * 3600 * 1'000'000'000ull;
  const uint64_t timeout = a.timeout_ns < kCentury ? a.timeout_ns : kCentury;
  // NCCLSCOPE_MOE_DEVICE_EPOCH: the one after the last call's on this rank's buffer.
  c.expected_epoch = *c.buffer[c.rank].last_epoch() + 1;
  const uint32_t epoch = a.flags == NCCLSCOPE_MOE_DEVICE_EPOCH ? c.expected_epoch : a.epoch;
  c.side =
      BarrierSide{c.rank, c.nranks, epoch, MonotonicNs() + static_cast<int64_t>(timeout), c.signal};
  return c;
}

void PostGridBarrier(const MoeTwinCall& c, uint32_t b, Barrier which) noexcept {
  for (int q = 0; q < c.nranks; ++q) PostEpoch(FlagOf(c.signal[q], b, which, c.rank), c.side.epoch);
}

bool WaitGridBarrier(const MoeTwinCall& c, Barrier which, Stall* stall) noexcept {
  for (uint32_t block = 0; block < c.blocks; ++block) {
    for (int q = 0; q < c.nranks; ++q) {
      *stall = Stall{c.rank, q, block, which, c.side.epoch, 0};
      const uint32_t* flag = FlagOf(c.signal[c.rank], block, which, q);
      if (!WaitForEpoch(flag, c.side.epoch, c.side.deadline_ns, stall)) return false;
    }
  }
  return true;
}

ncclscope_moe_result FinishMoeCall(const MoeTwinCall& c) noexcept {
  ncclscope_moe_status s{NCCLSCOPE_MOE_OK, -1, 0};
  for (int q = 0; q < c.nranks && s.code == NCCLSCOPE_MOE_OK; ++q) {
    const MoeCallHeader* h = c.buffer[q].header(c.side.epoch);
    for (uint32_t b = 0; b < c.blocks; ++b) {
      if (h->error[b].code != 0) {
        s = ncclscope_moe_status{h->error[b].code, q, h->error[b].detail};
        break;
      }
    }
  }
  *c.args->status = s;
  *c.buffer[c.rank].last_epoch() = c.side.epoch;
  return static_cast<ncclscope_moe_result>(s.code);
}

ncclscope_moe_result MoeCallStale(const MoeTwinCall& c) noexcept {
  *c.args->status = ncclscope_moe_status{NCCLSCOPE_MOE_STALE_EPOCH, c.rank,
                                         static_cast<int32_t>(c.expected_epoch)};
  return NCCLSCOPE_MOE_STALE_EPOCH;
}

ncclscope_moe_result MoeCallTimedOut(const MoeTwinCall& c, const Stall& stall) noexcept {
  if (c.args->stall != nullptr) {
    RecordKernelStall(reinterpret_cast<KernelStall*>(c.args->stall), stall);
  }
  *c.args->status = ncclscope_moe_status{NCCLSCOPE_MOE_TIMEOUT, c.rank, stall.peer};
  *c.buffer[c.rank].last_epoch() = c.side.epoch;
  return NCCLSCOPE_MOE_TIMEOUT;
}

}  // namespace ncclscope::collectives
