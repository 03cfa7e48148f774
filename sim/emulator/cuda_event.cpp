#include "sim/emulator/cuda_event.h"

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/stream_queue.h"

namespace ncclsim {

namespace {

struct Marker {
  std::shared_ptr<EventState> state;
  uint64_t gen;
};

void passMarker(void* arg) {
  auto* m = static_cast<Marker*>(arg);
  {
    std::lock_guard<std::mutex> lock(m->state->mu);
    // A later record may have been passed already on another stream; keep the newest.
    if (m->gen > m->state->passed_gen) {
      m->state->passed_gen = m->gen;
      m->state->passed_ns = nowNs();
    }
  }
  m->state->cv.notify_all();
  delete m;
}

void waitMarker(void* arg) {
  auto* m = static_cast<Marker*>(arg);
  std::unique_lock<std::mutex> lock(m->state->mu);
  m->state->cv.wait(lock, [m] { return m->state->passed_gen >= m->gen; });
  lock.unlock();
  delete m;
}

}  // namespace

void recordEvent(EventHandle* ev, void* stream_handle) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(ev->state->mu);
    gen = ++ev->state->recorded_gen;
  }
  resolveStream(stream_handle)->enqueue(passMarker, new Marker{ev->state, gen});
}

bool eventPassed(EventHandle* ev) {
  std::lock_guard<std::mutex> lock(ev->state->mu);
  return ev->state->passed_gen >= ev->state->recorded_gen;
}

void waitEvent(EventHandle* ev) {
  std::unique_lock<std::mutex> lock(ev->state->mu);
  uint64_t gen = ev->state->recorded_gen;
  ev->state->cv.wait(lock, [&] { return ev->state->passed_gen >= gen; });
}

void streamWaitEvent(void* stream_handle, EventHandle* ev) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(ev->state->mu);
    gen = ev->state->recorded_gen;
  }
  if (gen == 0) return;
  resolveStream(stream_handle)->enqueue(waitMarker, new Marker{ev->state, gen});
}

}  // namespace ncclsim
