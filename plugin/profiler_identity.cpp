#include "plugin/profiler_identity.h"

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

}  // namespace

uint64_t FindCreatingComm(const trace::RingWriter& ring, uint32_t tid, int rank,
                          int nranks) noexcept {
  const uint64_t end = ring.header().write_pos.load(std::memory_order_acquire);
  const uint64_t window =
      ring.capacity() < kCreationScanRecords ? ring.capacity() : kCreationScanRecords;
  const uint64_t begin = end > window ? end - window : 0;
  uint64_t only = 0;
  int others = 0;
  for (uint64_t i = end; i > begin; --i) {
    trace::RecordData d{};
    if (!ring.ReadSlot(i - 1, &d) || d.result != trace::kResultInCall) continue;
    const uint64_t id = CreatedId(d, rank, nranks);
    if (id == 0) continue;
    if (d.tid == tid) return id;
    // A split's size is unknown before it returns: only unique-id creations can stand alone.
    if (!FromUniqueId(static_cast<OpType>(d.op))) continue;
    if (id != only) {
      only = id;
      ++others;
    }
  }
  return others == 1 ? only : 0;
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
