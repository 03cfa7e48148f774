#include "sim/emulator/stream_queue.h"

#include <pthread.h>

#include <chrono>
#include <thread>
#include <vector>

#include <cuda.h>

namespace ncclsim {

uint64_t StreamQueue::enqueue(Fn fn, void* arg) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.emplace_back(fn, arg);
  uint64_t ticket = ++enqueued_;
  retired_ = false;
  if (!worker_running_) {
    worker_running_ = true;
    // Detached: joining would hang exit when a task (a stalled "device") never returns.
    std::thread([this] { serve(); }).detach();
  } else {
    work_cv_.notify_one();
  }
  return ticket;
}

void StreamQueue::serve() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return !tasks_.empty() || retired_; });
    if (tasks_.empty()) break;
    auto [fn, arg] = tasks_.front();
    tasks_.pop_front();
    lock.unlock();
    fn(arg);
    lock.lock();
    ++completed_;
    done_cv_.notify_all();
  }
  worker_running_ = false;
}

uint64_t StreamQueue::lastTicket() {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

bool StreamQueue::passed(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ >= ticket;
}

bool StreamQueue::waitPassed(uint64_t ticket, long timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto done = [&] { return completed_ >= ticket; };
  if (timeout_ms < 0) {
    done_cv_.wait(lock, done);
    return true;
  }
  return done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
}

void StreamQueue::retire() {
  std::lock_guard<std::mutex> lock(mu_);
  retired_ = true;
  work_cv_.notify_one();
}

namespace {

// Leaked on purpose: detached workers and the exit-time drain may use it after static destruction.
struct StreamRegistry {
  std::mutex mu;
  std::vector<StreamQueue*> all;
  StreamQueue* default_stream = nullptr;
};

StreamRegistry* g_stream_registry = nullptr;
std::once_flag g_registry_once;

// A CUDA context does not survive fork(); neither do our streams. The child starts with none, and
// never touches the parent's registry, whose lock may have been held by another thread at fork.
void resetStreamRegistryInChild() {
  g_stream_registry = new StreamRegistry;
}

StreamRegistry& streamRegistry() {
  std::call_once(g_registry_once, [] {
    g_stream_registry = new StreamRegistry;
    pthread_atfork(nullptr, nullptr, resetStreamRegistryInChild);
  });
  return *g_stream_registry;
}

}  // namespace

StreamQueue* createStream() {
  auto* s = new StreamQueue;
  StreamRegistry& r = streamRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.all.push_back(s);
  return s;
}

StreamQueue* resolveStream(void* handle) {
  if (handle != nullptr && handle != static_cast<void*>(CU_STREAM_LEGACY) &&
      handle != static_cast<void*>(CU_STREAM_PER_THREAD)) {
    return static_cast<StreamQueue*>(handle);
  }
  StreamRegistry& r = streamRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.default_stream == nullptr) {
    r.default_stream = new StreamQueue;
    r.all.push_back(r.default_stream);
  }
  return r.default_stream;
}

void forEachStream(void (*visit)(StreamQueue*, void*), void* ctx) {
  StreamRegistry& r = streamRegistry();
  std::vector<StreamQueue*> copy;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    copy = r.all;
  }
  for (StreamQueue* s : copy) visit(s, ctx);
}

}  // namespace ncclsim
