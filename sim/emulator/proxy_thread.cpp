#include "sim/emulator/proxy_thread.h"

#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace ncclsim {
namespace {

struct ProxyQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<void (*)(void*), void*>> work;
  bool running = false;
};

// Leaked on purpose: the detached thread may still wait on it during static destruction.
ProxyQueue* g_queue = nullptr;
std::once_flag g_once;

// A forked child has no proxy thread, and the parent's lock may have been held at fork: the
// child starts with a queue of its own.
void resetInChild() {
  g_queue = new ProxyQueue;
}

void serve(ProxyQueue* q) {
  std::unique_lock<std::mutex> lock(q->mu);
  for (;;) {
    q->cv.wait(lock, [q] { return !q->work.empty(); });
    const auto [fn, arg] = q->work.front();
    q->work.pop_front();
    lock.unlock();
    fn(arg);
    lock.lock();
  }
}

}  // namespace

void proxyPost(void (*fn)(void*), void* arg) {
  std::call_once(g_once, [] {
    g_queue = new ProxyQueue;
    pthread_atfork(nullptr, nullptr, resetInChild);
  });
  ProxyQueue* q = g_queue;
  std::lock_guard<std::mutex> lock(q->mu);
  q->work.emplace_back(fn, arg);
  if (!q->running) {
    q->running = true;
    // Detached: like the stream workers, it must never hold up the process's exit.
    std::thread(serve, q).detach();
  } else {
    q->cv.notify_one();
  }
}

}  // namespace ncclsim
