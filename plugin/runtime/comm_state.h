// What the probe keeps per live communicator handle: identity and the sequence counters that make
// records of different ranks matchable.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nccl.h>

#include "plugin/runtime/v4_call_log.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {

struct AccelComm;  // plugin/accel/accel_comm.h

struct CommState {
  uint64_t id = 0;         // trace identity, equal on every member rank
  uint64_t parent_id = 0;  // 0 unless split or shrunk
  uint32_t origin = 0;     // trace::kCommFrom*
  uint32_t split_index = 0;
  int color = -1;
  int key = -1;
  std::string name;  // written before publication, read-only afterwards
  // The comm table entry published when the creation call began (trace::kNoCommEntry: none, the
  // table was full), completed in place once rank and size are known.
  uint32_t table_entry = trace::kNoCommEntry;

  // Collectives issued on this handle so far; the next one gets coll_seq + 1.
  std::atomic<uint64_t> coll_seq{0};
  // Splits and shrinks of this communicator so far (they share one index, as in trace/identity.h).
  std::atomic<uint32_t> children{0};
  // Last asynchronous error recorded, so a polling loop records a persisting error once.
  std::atomic<int> last_async_error{ncclSuccess};

  // Rank and size; -1 until known (a non-blocking split learns them when creation completes).
  std::atomic<int> rank{-1};
  std::atomic<int> nranks{-1};
  // Per-peer p2p counters, nranks entries each; null until nranks is known. Owned by this state.
  std::atomic<std::atomic<uint64_t>*> send_seq{nullptr};
  std::atomic<std::atomic<uint64_t>*> recv_seq{nullptr};
  std::unique_ptr<std::atomic<uint64_t>[]> send_storage;
  std::unique_ptr<std::atomic<uint64_t>[]> recv_storage;
  // Whether the comm table entry has been written (deferred for non-blocking splits).
  std::atomic<bool> published{false};
  // Claimed by the one thread that completes a deferred (non-blocking) creation.
  std::atomic<bool> completing{false};
  // Set once the watchdog called ncclCommAbort on this handle (NCCLSCOPE_ON_HANG=abort): NCCL has
  // freed it, so no later call on it (work, error polling, teardown) may reach NCCL again.
  std::atomic<bool> aborted_by_watchdog{false};
  // NCCLSCOPE_ACCEL: this communicator's side of ncclscope's own AllReduce, set up at its first
  // eligible call; null before. Used only by the thread calling on the communicator.
  std::shared_ptr<AccelComm> accel;
  // NCCLSCOPE_NUMERICS: collectives of the sampled operations left until the next sample (1: the
  // next one is sampled); 0 until the first such call decides, kNumericsNever when this
  // communicator is not sampled. Used only by the thread calling on the communicator.
  std::atomic<uint64_t> numerics_left{0};
  // Profiler v4 (NCCL 2.26-2.27): the calls whose Coll/P2p events may still come, written only
  // while a v4 profiler context is attached (Runtime::v4_profiler).
  V4CallLog v4_calls;

  bool AbortedByWatchdog() const noexcept {
    return aborted_by_watchdog.load(std::memory_order_acquire);
  }

  // Allocates the per-peer counters and publishes rank/nranks. Call once, from creation paths only
  // (never concurrently for one state).
  void SetRanks(int my_rank, int size) {
    if (size > 0) {
      send_storage = std::make_unique<std::atomic<uint64_t>[]>(size);
      recv_storage = std::make_unique<std::atomic<uint64_t>[]>(size);
      send_seq.store(send_storage.get(), std::memory_order_release);
      recv_seq.store(recv_storage.get(), std::memory_order_release);
    }
    rank.store(my_rank, std::memory_order_relaxed);
    nranks.store(size, std::memory_order_release);
  }

  // Next per-(comm, peer) sequence number for a send (or recv) with peer; 0 when peer is out of
  // range or the size is not yet known. Hot path, lock-free; one thread per communicator at a time.
  uint64_t NextP2PSeq(bool send, int peer) {
    const int n = nranks.load(std::memory_order_acquire);
    std::atomic<uint64_t>* counters = (send ? send_seq : recv_seq).load(std::memory_order_acquire);
    if (counters == nullptr || peer < 0 || peer >= n) return 0;
    return Bump(counters[peer]);
  }

  // The number the next send (or recv) with peer will take; 0 as NextP2PSeq. Lock-free.
  uint64_t PeekP2PSeq(bool send, int peer) const {
    const int n = nranks.load(std::memory_order_acquire);
    std::atomic<uint64_t>* counters = (send ? send_seq : recv_seq).load(std::memory_order_acquire);
    if (counters == nullptr || peer < 0 || peer >= n) return 0;
    return counters[peer].load(std::memory_order_relaxed) + 1;
  }

  // Next collective sequence number. Hot path, lock-free.
  uint64_t NextCollSeq() { return Bump(coll_seq); }

 private:
  // NCCL forbids issuing operations on one communicator from two threads at once (user guide,
  // "Thread Safety"), and a handover between threads synchronizes them, so the per-communicator
  // counters need no atomic read-modify-write: a load and a store save a locked instruction per
  // call. They stay atomics so readers on other threads (the profiler plugin) see whole values.
  static uint64_t Bump(std::atomic<uint64_t>& counter) {
    const uint64_t next = counter.load(std::memory_order_relaxed) + 1;
    counter.store(next, std::memory_order_relaxed);
    return next;
  }
};

}  // namespace ncclscope::plugin
