// A tiny stand-in for libcuda.so.1 with the functions the completion tracker uses: an event
// "completes" a fixed time after it is recorded. Allocation-free after the first event (the hot
// path test counts allocations while it runs).
#include <cuda.h>

#include <atomic>
#include <ctime>

namespace {

constexpr int kMaxEvents = 1 << 16;
constexpr long kCompletionDelayNs = 200'000;

struct FakeEvent {
  std::atomic<long> done_at_ns{0};
};
FakeEvent g_events[kMaxEvents];
std::atomic<int> g_next_event{0};

long NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000L + ts.tv_nsec;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int) {
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = reinterpret_cast<CUcontext>(0x1000);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* event, unsigned int) {
  const int i = g_next_event.fetch_add(1);
  if (i >= kMaxEvents) return CUDA_ERROR_OUT_OF_MEMORY;
  *event = reinterpret_cast<CUevent>(&g_events[i]);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream) {
  reinterpret_cast<FakeEvent*>(event)->done_at_ns.store(NowNs() + kCompletionDelayNs);
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent event) {
  return NowNs() >= reinterpret_cast<FakeEvent*>(event)->done_at_ns.load() ? CUDA_SUCCESS
                                                                           : CUDA_ERROR_NOT_READY;
}

CUresult cuEventDestroy_v2(CUevent) {
  return CUDA_SUCCESS;
}

}  // extern "C"
