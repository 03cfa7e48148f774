#include "plugin/profiler/profiler_identity.h"

#include "trace/identity.h"

namespace ncclscope::plugin {
namespace {

using trace::OpType;

bool FromUniqueId(OpType op) {
  return op == OpType::kCommInitRank || op == OpType::kCommInitRankConfig ||
         op == OpType::kCommInitRankScalable;
}

// The id of the communicator an open creation record creates; 0 when it cannot be this one.
uint64_t CreatedId(const trace::RecordData& d, int rank, int nranks) {
  const auto op = static_cast<OpType>(d.op);
  if (FromUniqueId(op)) {
    const auto r = static_cast<int>(static_cast<uint32_t>(d.aux >> 32));
    const auto n = static_cast<int>(static_cast<uint32_t>(d.aux));
    return r == rank && n == nranks ? d.comm_id : 0;
  }
  if (d.comm_id == 0 || d.seq == 0) return 0;  // a split of a communicator we do not know
  const auto index = static_cast<uint32_t>(d.seq);
  if (op == OpType::kCommSplit) {
    const auto color = static_cast<int>(static_cast<uint32_t>(d.aux >> 32));
    return trace::CommIdFromSplit(d.comm_id, index, color);
  }
  if (op == OpType::kCommShrink) return trace::CommIdFromShrink(d.comm_id, index);
  return 0;
}

// The one id offered, or `several`.
struct OnlyId {
  uint64_t id = 0;
  bool several = false;
  void Add(uint64_t v) {
    if (id == 0) {
      id = v;
    } else if (v != id) {
      several = true;
    }
  }
};

struct DeferredCreation {
  uint64_t group;
  uint64_t id;
};
constexpr size_t kMaxOpenGroups = 8;
constexpr size_t kMaxDeferred = 64;

}  // namespace

uint64_t FindCreatingComm(const trace::RingWriter& ring, uint32_t tid, int rank,
                          int nranks) noexcept {
  const uint64_t end = ring.header().write_pos.load(std::memory_order_acquire);
  const uint64_t window =
      ring.capacity() < kCreationScanRecords ? ring.capacity() : kCreationScanRecords;
  const uint64_t begin = end > window ? end - window : 0;
  OnlyId open_elsewhere;
  uint64_t open_groups[kMaxOpenGroups];
  size_t n_open_groups = 0;
  DeferredCreation deferred[kMaxDeferred];
  size_t n_deferred = 0;
  for (uint64_t i = end; i > begin; --i) {
    trace::RecordData d{};
    if (!ring.ReadSlot(i - 1, &d)) continue;
    const auto op = static_cast<OpType>(d.op);
    if (d.result == trace::kResultInCall) {
      if (op == OpType::kGroupEnd && d.group_id != 0 && n_open_groups < kMaxOpenGroups) {
        open_groups[n_open_groups++] = d.group_id;
      }
      const uint64_t id = CreatedId(d, rank, nranks);
      if (id == 0) continue;
      if (d.tid == tid) return id;
      // A split's size is unknown before it returns: only unique-id creations can stand alone.
      if (FromUniqueId(op)) open_elsewhere.Add(id);
    } else if (FromUniqueId(op) && (d.flags & trace::kFlagInGroup) != 0 &&
               (d.result == ncclSuccess || d.result == ncclInProgress) &&
               n_deferred < kMaxDeferred) {
      const uint64_t id = CreatedId(d, rank, nranks);
      if (id != 0) deferred[n_deferred++] = {d.group_id, id};
    }
  }
  if (open_elsewhere.several) return 0;
  if (open_elsewhere.id != 0) return open_elsewhere.id;
  // Creations issued inside a group run when the group ends (JAX/XLA create every local device's
  // communicator that way): a creation of this shape in a group whose ncclGroupEnd is still open.
  OnlyId in_open_group;
  for (size_t k = 0; k < n_deferred; ++k) {
    for (size_t g = 0; g < n_open_groups; ++g) {
      if (deferred[k].group == open_groups[g]) in_open_group.Add(deferred[k].id);
    }
  }
  return in_open_group.several ? 0 : in_open_group.id;
}

CommState* FindCommState(const Runtime& rt, uint64_t id, int rank, const char* name) noexcept {
  CommState* found = nullptr;
  rt.comms.ForEach([&](void*, CommState* cs) {
    if (found == nullptr && cs->id == id && cs->rank.load(std::memory_order_relaxed) == rank) {
      found = cs;
    }
  });
  if (found != nullptr && name != nullptr && *name != '\0' && found->name != name) return nullptr;
  return found;
}

}  // namespace ncclscope::plugin
