// Emulated driver entry points for streams, events and host functions, plus the ncclsim stream C
// API used by the emulated NCCL. Semantics: see stream_queue.h and cuda_event.h.
#include <vector>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/cuda_event.h"
#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/env_config.h"
#include "sim/emulator/sim_stream.h"
#include "sim/emulator/stream_capture.h"
#include "sim/emulator/stream_queue.h"

using ncclsim::EventHandle;
using ncclsim::resolveStream;

namespace {

EventHandle* asEvent(CUevent e) {
  return reinterpret_cast<EventHandle*>(e);
}

struct HostCall {
  CUhostFn fn;
  void* arg;
};

void runHostCall(void* p) {
  auto* call = static_cast<HostCall*>(p);
  call->fn(call->arg);
  delete call;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int flags) {
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phStream = reinterpret_cast<CUstream>(ncclsim::createStream());
  return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return cuStreamCreate(phStream, flags);
}

// As in CUDA, work already queued still runs; the handle is invalid afterwards.
CUresult cuStreamDestroy(CUstream hStream) {
  if (hStream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  resolveStream(hStream)->retire();
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  ncclsim::StreamQueue* s = resolveStream(hStream);
  s->waitPassed(s->lastTicket());
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream hStream) {
  ncclsim::StreamQueue* s = resolveStream(hStream);
  return s->passed(s->lastTicket()) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  ncclsim::streamWaitEvent(hStream, asEvent(hEvent));
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  resolveStream(hStream)->enqueue(runHostCall, new HostCall{fn, userData});
  return CUDA_SUCCESS;
}

// Active between cuStreamBeginCapture and cuStreamEndCapture (cuda_api_module.cpp).
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  if (captureStatus == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *captureStatus = ncclsim::streamCapturing(hStream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                     : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  ncclsim::forEachStream([](ncclsim::StreamQueue* s, void*) { s->waitPassed(s->lastTicket()); },
                         nullptr);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int flags) {
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* ev = new EventHandle;
  ev->state->flags = flags;
  *phEvent = reinterpret_cast<CUevent>(ev);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  ncclsim::recordEvent(asEvent(hEvent), hStream);
  return CUDA_SUCCESS;
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return cuEventRecord(hEvent, hStream);
}

CUresult cuEventQuery(CUevent hEvent) {
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return ncclsim::eventPassed(asEvent(hEvent)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  ncclsim::waitEvent(asEvent(hEvent));
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  if (hEvent == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  delete asEvent(hEvent);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (hStart == nullptr || hEnd == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t t[2];
  CUevent evs[2] = {hStart, hEnd};
  for (int i = 0; i < 2; ++i) {
    ncclsim::EventState& st = *asEvent(evs[i])->state;
    std::lock_guard<std::mutex> lock(st.mu);
    if ((st.flags & CU_EVENT_DISABLE_TIMING) != 0 || st.recorded_gen == 0) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (st.passed_gen < st.recorded_gen) return CUDA_ERROR_NOT_READY;
    t[i] = st.passed_ns;
  }
  *pMilliseconds = float((double(t[1]) - double(t[0])) / 1e6);
  return CUDA_SUCCESS;
}

void ncclsimStreamEnqueue(CUstream s, void (*fn)(void*), void* arg) {
  resolveStream(s)->enqueue(fn, arg);
}

int ncclsimStreamsDrain(int timeout_ms) {
  struct Ctx {
    uint64_t deadline;
    int busy;
  } ctx{ncclsim::nowNs() + uint64_t(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull, 0};
  ncclsim::forEachStream(
      [](ncclsim::StreamQueue* s, void* p) {
        auto* c = static_cast<Ctx*>(p);
        uint64_t now = ncclsim::nowNs();
        long left_ms = now >= c->deadline ? 0 : long((c->deadline - now) / 1000000ull);
        if (!s->waitPassed(s->lastTicket(), left_ms)) ++c->busy;
      },
      &ctx);
  return ctx.busy;
}

}  // extern "C"

namespace {

// Pending stream work gets a bounded chance to finish at exit (a peer may wait for the data it
// publishes); a stream blocked forever only delays exit by the bound.
__attribute__((destructor)) void drainStreamsAtExit() {
  static const long bound = ncclsim::envLong("NCCLSIM_EXIT_DRAIN_MS", 1000, 0, 600000);
  ncclsimStreamsDrain(int(bound));
}

}  // namespace

// Older and per-thread-default-stream names of the same entry points, for callers that dlsym them
// directly. The emulator has a single default stream, so _ptsz behaves like the legacy name.
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#define NCCLSIM_ALIAS(name, target) \
  extern "C" __attribute__((        \
      alias(#target))) decltype(target) name;  // NOLINT(bugprone-macro-parentheses): a declarator
NCCLSIM_ALIAS(cuStreamDestroy, cuStreamDestroy_v2)
NCCLSIM_ALIAS(cuEventDestroy, cuEventDestroy_v2)
NCCLSIM_ALIAS(cuEventElapsedTime, cuEventElapsedTime_v2)
NCCLSIM_ALIAS(cuStreamQuery_ptsz, cuStreamQuery)
NCCLSIM_ALIAS(cuStreamSynchronize_ptsz, cuStreamSynchronize)
NCCLSIM_ALIAS(cuStreamWaitEvent_ptsz, cuStreamWaitEvent)
NCCLSIM_ALIAS(cuEventRecord_ptsz, cuEventRecord)
NCCLSIM_ALIAS(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags)
NCCLSIM_ALIAS(cuLaunchHostFunc_ptsz, cuLaunchHostFunc)
NCCLSIM_ALIAS(cuStreamIsCapturing_ptsz, cuStreamIsCapturing)
