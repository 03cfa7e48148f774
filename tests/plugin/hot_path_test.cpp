// The hot path makes no heap allocation and takes no lock: malloc/free/operator new and
// pthread_mutex_lock are interposed by this executable and counted on the calling thread while it
// issues collectives, send/recv and groups through the probe (linked in, in front of the fake
// libnccl, with completion tracking on through the fake libcuda). The fake libnccl also drives the
// probe's profiler-plugin table inside each allreduce (CollApi, Coll, two KernelCh with their
// stops, a network send's ProxyOp and ProxySteps, a send's P2pApi, P2p and KernelCh), as NCCL does,
// so the profiler callbacks are inside the counted window.
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>

#include "../trace/temp_dir.h"
#include "plugin/core/probe_clock.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/profiler/profiler_plugin.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void __libc_free(void*);
extern "C" void fakenccl_set_hooks(void (*on_init)(void*, int, int),
                                   void (*on_allreduce)(void*, int, int), void* arg);
extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;

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

namespace abi = ncclscope::plugin::prof_abi;
void* g_profiler_ctx = nullptr;
int g_profiler_mask = 0;

void ProfilerInit(void*, int rank, int nranks) {
  ncclProfiler_v5.init(&g_profiler_ctx, 1, &g_profiler_mask, nullptr, 1, nranks, rank, nullptr);
}

void ProfilerEvents(void*, int, int) {
  void* api = nullptr;
  void* coll = nullptr;
  void* kernel = nullptr;
  abi::EventDescrV5 e{};
  e.type = abi::kCollApi;
  ncclProfiler_v5.startEvent(g_profiler_ctx, &api, &e);
  e.type = abi::kColl;
  e.parentObj = api;
  ncclProfiler_v5.startEvent(g_profiler_ctx, &coll, &e);
  ncclProfiler_v5.stopEvent(coll);
  ncclProfiler_v5.stopEvent(api);
  e.type = abi::kKernelCh;
  e.parentObj = coll;
  abi::StateArgsV4 args{};
  for (uint8_t ch = 0; ch < 2; ++ch) {
    e.kernelCh.channelId = ch;
    ncclProfiler_v5.startEvent(g_profiler_ctx, &kernel, &e);
    ncclProfiler_v5.recordEventState(kernel, abi::kStateKernelChStop, &args);
    ncclProfiler_v5.stopEvent(kernel);
  }
  // Proxy detail (src/transport/net.cc sendProxyProgress): one network send of two steps.
  void* op = nullptr;
  abi::EventDescrV5 p{};
  p.type = abi::kProxyOp;
  p.parentObj = coll;
  p.proxyOp = {getpid(), 0, 1, 2, 1 << 20, 1};
  ncclProfiler_v5.startEvent(g_profiler_ctx, &op, &p);
  for (int step = 0; step < 2; ++step) {
    void* h = nullptr;
    abi::EventDescrV5 st{};
    st.type = abi::kProxyStep;
    st.parentObj = op;
    st.proxyStep.step = step;
    ncclProfiler_v5.startEvent(g_profiler_ctx, &h, &st);
    for (const int state : {8, 20, 9}) ncclProfiler_v5.recordEventState(h, state, &args);
    ncclProfiler_v5.stopEvent(h);
  }
  ncclProfiler_v5.stopEvent(op);
  // A send's P2pApi and P2p (src/enqueue.cc p2pTaskAppend, src/plugin/profiler.cc
  // ncclProfilerStartTaskEvents) and its kernel channel.
  void* p2p_api = nullptr;
  void* p2p = nullptr;
  abi::EventDescrV5 q{};
  q.type = abi::kP2pApi;
  q.p2pApi.func = "Send";
  ncclProfiler_v5.startEvent(g_profiler_ctx, &p2p_api, &q);
  ncclProfiler_v5.stopEvent(p2p_api);
  q.type = abi::kP2p;
  q.parentObj = p2p_api;
  q.p2p.func = "Send";
  q.p2p.peer = 1;
  ncclProfiler_v5.startEvent(g_profiler_ctx, &p2p, &q);
  ncclProfiler_v5.stopEvent(p2p);
  e.parentObj = p2p;
  ncclProfiler_v5.startEvent(g_profiler_ctx, &kernel, &e);
  ncclProfiler_v5.stopEvent(kernel);
}

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
  fakenccl_set_hooks(ProfilerInit, ProfilerEvents, nullptr);
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
  const uint64_t markers = ncclscope::plugin::profiler::GetStats().markers;
  std::printf("profiler device_start records=%llu\n", static_cast<unsigned long long>(markers));
  if (!ok || t_allocations != 0 || t_locks != 0) {
    std::fprintf(stderr, "FAIL: the hot path allocated or locked (or a call failed)\n");
    return 1;
  }
  // The profiler callbacks were really in the window: one start record per allreduce.
  if (g_profiler_ctx == nullptr || markers < 20000) {
    std::fprintf(stderr, "FAIL: the profiler table was not exercised\n");
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
