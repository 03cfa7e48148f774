#include "plugin/runtime/comm_registry.h"

#include <cstddef>
#include <cstring>
#include <memory>

#include "plugin/core/nccl_symbols.h"
#include "plugin/core/probe_clock.h"
#include "plugin/core/warn.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;  // NCCL_CONFIG_INITIALIZER's magic

template <typename Fn>
int QueryInt(Fn fn, ncclComm_t comm) {
  int value = -1;
  if (fn == nullptr || fn(comm, &value) != ncclSuccess) return -1;
  return value;
}

void Publish(Runtime& rt, ncclComm_t comm, CommState* st, int cuda_device) {
  trace::CommInfo info;
  info.id = st->id;
  info.parent_id = st->parent_id;
  info.origin = st->origin;
  info.rank = st->rank.load(std::memory_order_relaxed);
  info.nranks = st->nranks.load(std::memory_order_relaxed);
  info.color = st->color;
  info.key = st->key;
  info.split_index = st->split_index;
  info.cuda_device = cuda_device;
  info.created_monotonic_ns = ProbeNowNs();
  info.handle = reinterpret_cast<uintptr_t>(comm);
  info.name = st->name;
  if (st->table_entry != trace::kNoCommEntry) {
    rt.ring->CompleteComm(st->table_entry, info);
  } else {
    rt.ring->AddComm(info);
  }
  // The first communicator's device is this process's GPU (one GPU per rank): its UUID lets
  // dashboards join our metrics with dcgm-exporter's.
  if (cuda_device >= 0 && rt.tracker != nullptr && !rt.ring->HasGpuUuid()) {
    rt.ring->SetGpuUuid(rt.tracker->GpuUuid(cuda_device));
  }
  st->published.store(true, std::memory_order_release);
  if (st->origin == trace::kCommFromUniqueId && rt.ring->GlobalRank() < 0 && info.rank >= 0) {
    rt.ring->SetGlobalRank(info.rank, info.nranks);
  }
}

}  // namespace

std::string CommNameFromConfig(const ncclConfig_t* config, const std::string& fallback) {
  // An application built against an older nccl.h passes a shorter struct: check size and magic
  // before reading the field.
  constexpr size_t kNameEnd = offsetof(ncclConfig_t, commName) + sizeof(config->commName);
  if (config == nullptr || config->magic != kConfigMagic || config->size < kNameEnd ||
      config->commName == nullptr) {
    return fallback;
  }
  const size_t n = strnlen(config->commName, kMaxConfigNameBytes);
  return n != 0 ? std::string(config->commName, n) : fallback;
}

uint32_t AnnounceComm(Runtime& rt, const CommSpec& spec) noexcept {
  try {
    trace::CommInfo info;
    info.id = spec.id;
    info.parent_id = spec.parent_id;
    info.origin = spec.origin;
    info.rank = spec.rank;
    info.nranks = spec.nranks;
    info.color = spec.color;
    info.key = spec.key;
    info.split_index = spec.split_index;
    info.created_monotonic_ns = ProbeNowNs();
    info.name = spec.name;
    return rt.ring->AddPendingComm(info);
  } catch (...) {
    return trace::kNoCommEntry;
  }
}

void WithdrawComm(Runtime& rt, uint32_t entry) noexcept {
  if (entry != trace::kNoCommEntry) rt.ring->WithdrawComm(entry);
}

CommState* RegisterComm(Runtime& rt, ncclComm_t comm, const CommSpec& spec) noexcept {
  CommState* raw = nullptr;
  try {
    auto st = std::make_unique<CommState>();
    st->id = spec.id;
    st->parent_id = spec.parent_id;
    st->origin = spec.origin;
    st->split_index = spec.split_index;
    st->color = spec.color;
    st->key = spec.key;
    st->name = spec.name;
    st->table_entry = spec.table_entry;
    int rank = spec.rank;
    int nranks = spec.nranks;
    int device = spec.cuda_device;
    if (spec.complete) {
      if (rank < 0) rank = QueryInt(NCCLSCOPE_REAL(CommUserRank), comm);
      if (nranks < 0) nranks = QueryInt(NCCLSCOPE_REAL(CommCount), comm);
      if (device < 0) device = QueryInt(NCCLSCOPE_REAL(CommCuDevice), comm);
    }
    if (nranks > 0) st->SetRanks(rank, nranks);
    raw = rt.comms.Insert(comm, std::move(st));
    if (raw == nullptr) {
      WarnOnce(WarnKey::kCommTableFull,
               "more communicators than the probe's map holds; calls on the newest are recorded "
               "with communicator id 0");
      // Its calls carry id 0, so the table must not describe it under its id either.
      WithdrawComm(rt, spec.table_entry);
      return nullptr;
    }
    if (nranks > 0) Publish(rt, comm, raw, device);
    return raw;
  } catch (...) {
    // A mapped communicator keeps its entry (pending when publishing failed); one never mapped
    // has no calls under its id.
    if (raw == nullptr) WithdrawComm(rt, spec.table_entry);
    return raw;
  }
}

void CompleteDeferredComm(Runtime& rt, ncclComm_t comm, CommState* st) noexcept {
  if (st->published.load(std::memory_order_acquire)) return;
  if (st->completing.exchange(true, std::memory_order_acq_rel)) return;
  try {
    const int nranks = QueryInt(NCCLSCOPE_REAL(CommCount), comm);
    if (nranks <= 0) {
      st->completing.store(false, std::memory_order_release);
      return;
    }
    if (st->nranks.load(std::memory_order_acquire) <= 0) {
      st->SetRanks(QueryInt(NCCLSCOPE_REAL(CommUserRank), comm), nranks);
    }
    Publish(rt, comm, st, QueryInt(NCCLSCOPE_REAL(CommCuDevice), comm));
  } catch (...) {
    // Stays unpublished: its records still carry its id.
  }
}

void ForgetComm(Runtime& rt, ncclComm_t comm) noexcept {
  try {
    rt.comms.Erase(comm);
  } catch (...) {
    // A failed lock leaves the mapping; a reused handle replaces it at its next creation.
  }
}

}  // namespace ncclscope::plugin
