#include "plugin/runtime/v4_call_log.h"

#include "plugin/core/plugin_only_names.h"
#include "trace/nccl_names.h"

namespace ncclscope::plugin {
namespace {

using trace::OpType;

constexpr auto kRelaxed = std::memory_order_relaxed;

bool CountedInBytes(OpType op) {
  return op == OpType::kAllGather || op == OpType::kBroadcast;
}

bool HasRoot(OpType op) {
  return op == OpType::kBroadcast || op == OpType::kReduce;
}

}  // namespace

V4CallKey CollectiveCallKey(OpType op, const void* send, const void* recv, size_t count,
                            ncclDataType_t dtype, int root) noexcept {
  V4CallKey k;
  k.op = static_cast<uint32_t>(op);
  k.send = send;
  k.recv = recv;
  k.peer = HasRoot(op) ? root : -1;
  k.count = count;
  k.dtype = dtype;
  if (CountedInBytes(op)) {
    const int size = trace::DataTypeSize(dtype);
    k.count = size > 0 ? count * static_cast<uint64_t>(size) : 0;
    k.dtype = ncclInt8;
  }
  return k;
}

V4CallKey P2pCallKey(bool send, const void* buff, size_t count, ncclDataType_t dtype,
                     int peer) noexcept {
  V4CallKey k;
  k.op = static_cast<uint32_t>(send ? OpType::kSend : OpType::kRecv);
  k.send = buff;
  k.peer = peer;
  k.count = count;
  k.dtype = dtype;
  return k;
}

V4CallKey CollEventKey(const prof_abi::CollV4& coll) noexcept {
  V4CallKey k;
  const OpType op = plugin_only::OpOfFunc(coll.func);
  // Only collectives make Coll events; NCCL runs AlltoAll, Gather and Scatter as P2p parts.
  if (op == OpType::kSend || op == OpType::kRecv) return k;
  k.op = static_cast<uint32_t>(op);
  k.send = coll.sendBuff;
  k.recv = coll.recvBuff;
  k.peer = HasRoot(op) ? coll.root : -1;
  k.count = coll.count;
  k.dtype = plugin_only::DtypeOfName(coll.datatype);
  return k;
}

V4CallKey P2pEventKey(const char* func, const void* buff, const char* datatype, size_t count,
                      int peer) noexcept {
  V4CallKey k;
  const OpType op = plugin_only::OpOfFunc(func);
  if (op != OpType::kSend && op != OpType::kRecv) return k;
  k.op = static_cast<uint32_t>(op);
  k.send = buff;
  k.peer = peer;
  k.count = count;
  k.dtype = plugin_only::DtypeOfName(datatype);
  return k;
}

uint64_t V4CallLog::Add(const V4CallKey& key, uint64_t seq) noexcept {
  const uint64_t p = next_.load(kRelaxed);  // one writer: the communicator's issuing thread
  Entry& e = entries_[p % kEntries];
  // Seqlock write: a claimer that read the old fields sees the state change and lets go.
  e.state.store(kBusy, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  e.position.store(p, kRelaxed);
  e.count.store(key.count, kRelaxed);
  e.send.store(key.send, kRelaxed);
  e.recv.store(key.recv, kRelaxed);
  e.op.store(key.op, kRelaxed);
  e.peer.store(key.peer, kRelaxed);
  e.dtype.store(key.dtype, kRelaxed);
  e.state.store(seq << 2 | kOpen, std::memory_order_release);
  next_.store(p + 1, std::memory_order_release);
  return p;
}

void V4CallLog::Cancel(uint64_t position) noexcept {
  if (position == kNoEntry) return;
  Entry& e = entries_[position % kEntries];
  uint64_t s = e.state.load(std::memory_order_acquire);
  if ((s & kTagMask) != kOpen || e.position.load(kRelaxed) != position) return;
  e.state.compare_exchange_strong(s, (s & ~kTagMask) | kTaken, std::memory_order_acq_rel);
}

bool V4CallLog::OpenMatch(const Entry& e, uint64_t p, const V4CallKey& key,
                          uint64_t* state) noexcept {
  const uint64_t s = e.state.load(std::memory_order_acquire);
  *state = s;
  if ((s & kTagMask) != kOpen) return false;
  const bool same = e.position.load(kRelaxed) == p && e.op.load(kRelaxed) == key.op &&
                    e.count.load(kRelaxed) == key.count && e.peer.load(kRelaxed) == key.peer &&
                    e.send.load(kRelaxed) == key.send && e.recv.load(kRelaxed) == key.recv;
  const int32_t dtype = e.dtype.load(kRelaxed);
  // An event's unknown type name (NCCL's "Unknown" for ncclUint8) matches any type.
  const bool same_type = key.dtype < 0 || dtype == key.dtype;
  std::atomic_thread_fence(std::memory_order_acquire);
  return same && same_type && e.state.load(kRelaxed) == s;
}

uint64_t V4CallLog::Claim(const V4CallKey& key) noexcept {
  if (key.op == 0) return 0;
  const uint64_t end = next_.load(std::memory_order_acquire);
  AdvanceOldest(end);
  uint64_t p = oldest_.load(kRelaxed);
  if (end > kEntries && p < end - kEntries) p = end - kEntries;
  for (; p < end; ++p) {
    Entry& e = entries_[p % kEntries];
    // One relaxed load rules out nearly every other call (distinct buffers) before the seqlock
    // read of the whole entry.
    if (e.send.load(kRelaxed) != key.send) continue;
    uint64_t s = 0;
    if (!OpenMatch(e, p, key, &s)) continue;
    // The oldest match: taken once, by whichever event gets here first.
    if (e.state.compare_exchange_strong(s, (s & ~kTagMask) | kTaken, std::memory_order_acq_rel)) {
      return s >> 2;
    }
  }
  return 0;
}

// Moves oldest_ past entries no event can claim any more (taken, cancelled, overwritten), so a
// claim usually looks at the few calls of the newest group only. Never past an open entry.
void V4CallLog::AdvanceOldest(uint64_t end) noexcept {
  uint64_t from = oldest_.load(kRelaxed);
  uint64_t p = from;
  if (end > kEntries && p < end - kEntries) p = end - kEntries;
  for (; p < end; ++p) {
    const Entry& e = entries_[p % kEntries];
    const uint64_t s = e.state.load(std::memory_order_acquire);
    if ((s & kTagMask) == kOpen && e.position.load(kRelaxed) == p) break;
  }
  while (from < p && !oldest_.compare_exchange_weak(from, p, kRelaxed)) {
  }
}

}  // namespace ncclscope::plugin
