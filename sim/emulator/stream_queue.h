// One emulated CUDA stream: an ordered queue of host functions served by its own worker thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

namespace ncclsim {

// Ordered asynchronous work queue. The worker thread starts with the first task and is detached:
// a task that never returns blocks this queue forever but never the process exit. Objects are
// never freed (workers and exit-time drains may still hold them); a destroyed stream is retired.
// All member functions are thread-safe.
class StreamQueue {
 public:
  using Fn = void (*)(void*);

  // Appends fn(arg); returns its ticket (1, 2, ...). Never waits for the worker.
  uint64_t enqueue(Fn fn, void* arg);
  // Ticket of the last enqueued task (0 = none yet).
  uint64_t lastTicket();
  // True once the task with `ticket` (and so everything before it) has returned.
  bool passed(uint64_t ticket);
  // Blocks until passed(ticket); with timeout_ms >= 0 gives up after that long, returning false.
  bool waitPassed(uint64_t ticket, long timeout_ms = -1);
  // Lets the worker exit once the queue is empty; later enqueues start a new worker.
  void retire();

 private:
  void serve();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::pair<Fn, void*>> tasks_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool worker_running_ = false;
  bool retired_ = false;
};

// Resolves a CUstream-like handle value: 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD map to the
// per-process default stream. Thread-safe.
StreamQueue* resolveStream(void* handle);

// Creates a new stream, registered for exit-time draining. Thread-safe.
StreamQueue* createStream();

// Every stream created so far, including the default one if used. Thread-safe.
void forEachStream(void (*visit)(StreamQueue*, void*), void* ctx);

}  // namespace ncclsim
