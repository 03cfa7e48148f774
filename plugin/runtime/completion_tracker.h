// Device completion of recorded calls: a CUDA event recorded on the call's stream after NCCL
// enqueued its work, polled by one background thread that stamps the record when the event fires.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>
#include <nccl.h>

#include "cuda/driver.h"
#include "plugin/core/bounded_queue.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

class CompletionTracker {
 public:
  // Fills the driver table; called once, at the first call that wants tracking. Returns false with
  // *error set when the driver is unusable.
  using DriverLoader = std::function<bool(cuda::Driver*, std::string*)>;

  // ring outlives the tracker. Allocates the pool and queues; not thread-safe (construction).
  CompletionTracker(trace::RingWriter* ring, uint32_t event_pool, DriverLoader loader);
  ~CompletionTracker();
  CompletionTracker(const CompletionTracker&) = delete;
  CompletionTracker& operator=(const CompletionTracker&) = delete;

  // Whether events can be recorded; loads the driver at the first call (one warning if it cannot,
  // and tracking stays off). Thread-safe; lock-free once loaded.
  bool Ready() noexcept;

  // "GPU-..." of CUDA device `ordinal`, loading the driver like Ready(); empty when unknown.
  // Thread-safe; cold path (communicator creation).
  std::string GpuUuid(int ordinal) noexcept;

  // Hot path. Takes an event from the pool and records it on stream (in the current CUDA context).
  // Returns a token >= 0 that Submit consumes, or -1 when no event could be recorded (pool
  // exhausted or a driver error: counted as untracked). Thread-safe, lock-free.
  int32_t RecordOn(cudaStream_t stream) noexcept;

  // Hot path. Hands the records in slots, all waiting for token's event, to the poller; consumes
  // token. Records that do not fit in the queue are marked untracked and counted. Thread-safe.
  void Submit(int32_t token, const uint64_t* slots, uint32_t n) noexcept;

  // Marks records whose event will never come as untracked and counts them. Thread-safe.
  void Abandon(const uint64_t* slots, uint32_t n) noexcept;

  // One pass of the poller: takes new hand-offs, queries their events, stamps completed records
  // with now_ns. Returns how many records are still outstanding. Call from one thread only.
  size_t PollOnce(int64_t now_ns) noexcept;

 private:
  struct Event {
    CUevent event = nullptr;
    CUcontext ctx = nullptr;        // context the event was created in
    std::atomic<uint32_t> refs{0};  // records still waiting on it
  };
  struct Handoff {
    uint64_t slot;
    uint32_t token;
  };
  void Unref(uint32_t token) noexcept;
  void MarkUntracked(uint64_t slot) noexcept;

  trace::RingWriter* ring_;
  DriverLoader loader_;
  cuda::Driver driver_;
  enum : int { kNotLoaded, kReady, kFailed };
  std::atomic<int> driver_state_{kNotLoaded};
  std::mutex load_mutex_;
  std::unique_ptr<Event[]> events_;
  uint32_t event_count_;
  BoundedQueue<uint32_t> free_;
  BoundedQueue<Handoff> handoff_;
  std::vector<Handoff> in_flight_;  // poller thread only; reserved up front
};

// The tracker's loader in a job: the process's table of `library` (cuda/driver.h), checked for the
// functions the tracker calls, then cuInit(0). False with *error naming what failed. Thread-safe.
bool LoadCompletionDriver(const std::string& library, cuda::Driver* driver, std::string* error);

}  // namespace ncclscope::plugin
