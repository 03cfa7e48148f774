// The hot path makes no heap allocation and takes no lock: malloc/free/operator new and
// pthread_mutex_lock are interposed by this executable and counted on the calling thread while it
// issues collectives, send/recv and groups through the probe (linked in, in front of the fake
// libnccl, with completion tracking on through the fake libcuda).
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>

#include "../trace/temp_dir.h"
#include "plugin/probe_clock.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void __libc_free(void*);

namespace {
__thread bool t_counting = false;
__thread long t_allocations = 0;
__thread long t_locks = 0;
using LockFn = int (*)(pthread_mutex_t*);
LockFn g_real_lock = nullptr;
}  // namespace

extern "C" void* malloc(size_t n) {
  if (t_counting) ++t_allocations;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t m) {
  if (t_counting) ++t_allocations;
  return __libc_calloc(n, m);
}
extern "C" void* realloc(void* p, size_t n) {
  if (t_counting) ++t_allocations;
  return __libc_realloc(p, n);
}
extern "C" void free(void* p) {
  __libc_free(p);
}
extern "C" int pthread_mutex_lock(pthread_mutex_t* m) {
  if (t_counting) ++t_locks;
  return g_real_lock(m);
}
void* operator new(size_t n) {
  if (void* p = malloc(n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  free(p);
}
void operator delete(void* p, size_t) noexcept {
  free(p);
}

namespace {

bool IssueOneRound(ncclComm_t comm, cudaStream_t stream, float* buf) {
  bool ok = ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, stream) == ncclSuccess;
  ok &= ncclBroadcast(buf, buf, 16, ncclFloat32, 0, comm, stream) == ncclSuccess;
  ok &= ncclAllGather(buf, buf + 16, 4, ncclFloat32, comm, stream) == ncclSuccess;
  ok &= ncclGroupStart() == ncclSuccess;
  ok &= ncclSend(buf, 4, ncclFloat32, 1, comm, stream) == ncclSuccess;
  ok &= ncclRecv(buf, 4, ncclFloat32, 1, comm, stream) == ncclSuccess;
  ok &= ncclGroupEnd() == ncclSuccess;
  return ok;
}

}  // namespace

int main() {
  g_real_lock = reinterpret_cast<LockFn>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  ncclscope::testing::TempDir dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_CUDA_LIBRARY", FAKE_CUDA_LIBRARY, 1);
  setenv("NCCLSCOPE_EVENT_POOL", "64", 1);
  ncclUniqueId uid;
  ncclComm_t comm = nullptr;
  if (ncclGetUniqueId(&uid) != ncclSuccess || ncclCommInitRank(&comm, 2, uid, 0) != ncclSuccess) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  static float buf[64];
  const auto stream = reinterpret_cast<cudaStream_t>(0x1);
  // Warm-up: per-thread id, symbol resolution, driver load, creation of every pool event.
  for (int i = 0; i < 200; ++i) IssueOneRound(comm, stream, buf);
  // Where the TSC clock is usable, measure its path (the background thread calibrates it within
  // about 100 ms), not only clock_gettime's.
  for (int i = 0; i < 200 && !ncclscope::plugin::ProbeClockUsesTsc(); ++i) usleep(10'000);
  std::printf("clock=%s\n", ncclscope::plugin::ProbeClockUsesTsc() ? "tsc" : "clock_gettime");

  t_counting = true;
  bool ok = true;
  for (int i = 0; i < 20000; ++i) ok &= IssueOneRound(comm, stream, buf);
  t_counting = false;
  std::printf("calls=%d allocations=%ld locks=%ld\n", 20000 * 7, t_allocations, t_locks);
  if (!ok || t_allocations != 0 || t_locks != 0) {
    std::fprintf(stderr, "FAIL: the hot path allocated or locked (or a call failed)\n");
    return 1;
  }
  // The counters themselves must work, or the check above proves nothing.
  static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  t_counting = true;
  delete new int(1);
  pthread_mutex_lock(&mutex);
  t_counting = false;
  pthread_mutex_unlock(&mutex);
  if (t_allocations != 1 || t_locks != 1) {
    std::fprintf(stderr, "FAIL: the counting interposers do not work (%ld, %ld)\n", t_allocations,
                 t_locks);
    return 1;
  }
  return 0;
}
