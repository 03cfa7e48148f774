// A scriptable CUDA driver table (cuda/driver.h) for tests: events complete when the test says so.
#pragma once

#include <cuda.h>

#include <map>
#include <string>
#include <vector>

#include "cuda/driver.h"

namespace ncclscope::testing {

struct FakeDriverState {
  int created = 0;
  int destroyed = 0;
  CUresult record_result = CUDA_SUCCESS;
  CUresult query_error = CUDA_SUCCESS;  // returned instead of readiness when not CUDA_SUCCESS
  uintptr_t context = 0x1;
  std::vector<std::pair<int, CUstream>> records;  // (event number, stream)
  std::map<int, bool> done;                       // event number -> fired
};

inline FakeDriverState* g_fake = nullptr;

inline int EventNumber(CUevent e) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(e));
}

inline cuda::Driver MakeFakeDriver() {
  cuda::Driver d;
  d.init = [](unsigned) { return CUDA_SUCCESS; };
  d.ctx_get_current = [](CUcontext* c) {
    *c = reinterpret_cast<CUcontext>(g_fake->context);
    return CUDA_SUCCESS;
  };
  d.event_create = [](CUevent* e, unsigned) {
    *e = reinterpret_cast<CUevent>(static_cast<uintptr_t>(++g_fake->created));
    return CUDA_SUCCESS;
  };
  d.event_record = [](CUevent e, CUstream s) {
    if (g_fake->record_result != CUDA_SUCCESS) return g_fake->record_result;
    g_fake->records.emplace_back(EventNumber(e), s);
    g_fake->done[EventNumber(e)] = false;
    return CUDA_SUCCESS;
  };
  d.event_query = [](CUevent e) {
    if (g_fake->query_error != CUDA_SUCCESS) return g_fake->query_error;
    return g_fake->done[EventNumber(e)] ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  };
  d.event_destroy = [](CUevent) {
    ++g_fake->destroyed;
    return CUDA_SUCCESS;
  };
  return d;
}

// A loader for CompletionTracker that installs the fake.
inline bool LoadFake(cuda::Driver* d, std::string*) {
  *d = MakeFakeDriver();
  return true;
}

}  // namespace ncclscope::testing
