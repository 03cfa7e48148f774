// Emulated CUevent: records the time at which a stream passed the marker of its latest record.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace ncclsim {

struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded_gen = 0;  // bumped by every cuEventRecord
  uint64_t passed_gen = 0;    // generation of the newest marker a stream has passed
  uint64_t passed_ns = 0;     // nowNs() when that marker was passed
  unsigned flags = 0;
};

// What a CUevent handle points to. Markers in flight share the state, so destroying the handle
// while its marker is queued is safe (as in CUDA, where destroy of a pending event is allowed).
struct EventHandle {
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

// Enqueues a marker for `ev` on stream `stream_handle` (a CUstream value). Thread-safe.
void recordEvent(EventHandle* ev, void* stream_handle);

// True when the newest record of `ev` was passed (or it was never recorded). Thread-safe.
bool eventPassed(EventHandle* ev);

// Blocks until eventPassed(ev). Thread-safe.
void waitEvent(EventHandle* ev);

// Enqueues on `stream_handle` a task that waits for the current record of `ev`. Thread-safe.
void streamWaitEvent(void* stream_handle, EventHandle* ev);

}  // namespace ncclsim
