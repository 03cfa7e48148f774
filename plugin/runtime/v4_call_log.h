// Which interposed call a profiler-v4 Coll or P2p event describes when NCCL emits it outside that
// call. NCCL 2.26-2.27 (profiler v4) has no API events: a group's Coll and P2p events come at the
// outermost ncclGroupEnd, and with graph capture or CUDA_LAUNCH_BLOCKING from a host-callback
// thread (src/enqueue.cc hostStreamPlanTask), long after the call that made them returned, in
// NCCL's plan order rather than call order (collectives sorted by size, ncclTaskCollSorterInsert;
// sends and receives by p2p schedule round). What ties an event to its call is its arguments:
// NCCL copies them into the task (src/enqueue.cc collTaskAppend, p2pTaskAppend) and the event
// carries them (src/plugin/profiler.cc ncclProfilerStartTaskEvents). So the interposer logs each
// call's arguments with the number it will take, and the event claims the oldest logged call
// with its arguments. Two calls with equal arguments are interchangeable for what a marker says.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <nccl.h>

#include "plugin/core/profiler_abi.h"
#include "trace/record.h"

namespace ncclscope::plugin {

// What both sides know of one operation, in NCCL's task conventions (AllGather and Broadcast are
// counted in bytes of ncclInt8: collTaskAppend).
struct V4CallKey {
  uint32_t op = 0;             // trace::OpType
  int32_t peer = -1;           // send/recv peer; root of Broadcast/Reduce; -1 otherwise
  int32_t dtype = -1;          // ncclDataType_t; -1 unknown (2.28.9 names ncclUint8 "Unknown")
  uint64_t count = 0;          // elements (bytes for AllGather and Broadcast)
  const void* send = nullptr;  // sendbuff; a send's or a receive's one buffer
  const void* recv = nullptr;  // recvbuff of a collective
};

// The key of an interposed collective or send/recv, from the call's arguments.
V4CallKey CollectiveCallKey(trace::OpType op, const void* send, const void* recv, size_t count,
                            ncclDataType_t dtype, int root) noexcept;
V4CallKey P2pCallKey(bool send, const void* buff, size_t count, ncclDataType_t dtype,
                     int peer) noexcept;

// The key of a v4 Coll event, or of a P2p event whose func is "Send" or "Recv" (op 0 otherwise).
V4CallKey CollEventKey(const prof_abi::CollV4& coll) noexcept;
V4CallKey P2pEventKey(const char* func, const void* buff, const char* datatype, size_t count,
                      int peer) noexcept;

// The calls of one communicator whose events may still come. Add and Cancel are called by the
// thread issuing on the communicator (NCCL allows one at a time); Claim by any thread (the group's
// launching thread, a host-callback thread). Lock-free, no allocation; a call older than the last
// kEntries is forgotten and its event then reads as unknown (seq 0), as without the log.
class V4CallLog {
 public:
  static constexpr uint32_t kEntries = 64;
  static constexpr uint64_t kNoEntry = ~uint64_t{0};

  // Logs a call about to reach NCCL that takes number seq (> 0) if NCCL accepts it. Returns its
  // position for Cancel.
  uint64_t Add(const V4CallKey& key, uint64_t seq) noexcept;
  // NCCL refused the call at `position` (or ncclscope ran it): no event will come for it.
  void Cancel(uint64_t position) noexcept;
  // The number of the oldest logged call that key describes, which no later event can claim; 0
  // when none.
  uint64_t Claim(const V4CallKey& key) noexcept;

 private:
  // state: 0 empty, kBusy while written, seq << 2 | kOpen, seq << 2 | kTaken.
  static constexpr uint64_t kOpen = 1, kTaken = 2, kBusy = 3, kTagMask = 3;
  struct Entry {
    std::atomic<uint64_t> state{0};
    std::atomic<uint64_t> position{0};
    std::atomic<uint64_t> count{0};
    std::atomic<const void*> send{nullptr};
    std::atomic<const void*> recv{nullptr};
    std::atomic<uint32_t> op{0};
    std::atomic<int32_t> peer{-1};
    std::atomic<int32_t> dtype{-1};
  };
  // Whether entry e is open at position p and holds a key matching `key`; *state gets what was
  // read (a seqlock read: fields between two reads of the state).
  static bool OpenMatch(const Entry& e, uint64_t p, const V4CallKey& key, uint64_t* state) noexcept;
  void AdvanceOldest(uint64_t end) noexcept;

  Entry entries_[kEntries];
  std::atomic<uint64_t> next_{0};    // position of the next Add
  std::atomic<uint64_t> oldest_{0};  // no open entry lies before this position
};

}  // namespace ncclscope::plugin
