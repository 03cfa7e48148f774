// The emulated libcupti.so.13: the activity API subset the CUPTI probe calls, fed by the
// emulated libcuda's kernel tap. As CUPTI does, it writes an external correlation record for a
// launch only while the launching thread has an id pushed and both EXTERNAL_CORRELATION and an
// API kind (DRIVER) are enabled, and a kernel record only once the kernel has ended.
#include <cupti.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sim/cupti/activity_log.h"
#include "sim/emulator/kernel_activity.h"

namespace {

using ncclsim::cupti::ActivityLog;

ActivityLog& Log() {
  static auto* log = new ActivityLog;  // never destroyed: stream workers may report at exit
  return *log;
}

std::atomic<bool> g_kernels{false};
std::atomic<bool> g_external{false};
std::atomic<bool> g_driver{false};

// Kernel names live as long as the process, as CUPTI's do.
const char* Intern(const char* name) {
  static std::mutex mu;
  static auto* names = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(mu);
  return names->insert(name != nullptr ? name : "").first->c_str();
}

thread_local std::vector<uint64_t> t_external[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

bool ValidKind(CUpti_ExternalCorrelationKind kind) {
  return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID &&
         kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
}

void Launched(uint32_t correlation, void* /*user*/) {
  if (!g_external.load() || !g_driver.load()) return;
  for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; ++k) {
    if (t_external[k].empty()) continue;
    CUpti_ActivityExternalCorrelation r{};
    r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(k);
    r.externalId = t_external[k].back();
    r.correlationId = correlation;
    Log().Append(&r, sizeof r);
  }
}

void Ran(const ncclsimKernelRecord* k, void* /*user*/) {
  if (!g_kernels.load()) return;
  CUpti_ActivityKernel10 r{};
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.start = k->start_ns;
  r.end = k->end_ns;
  r.deviceId = k->device;
  r.streamId = k->stream;
  r.correlationId = k->correlation;
  r.name = Intern(k->name);
  Log().Append(&r, sizeof r);
}

std::atomic<bool>* Flag(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return &g_kernels;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return &g_external;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return &g_driver;
    default:
      return nullptr;
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed) {
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  Log().SetCallbacks(requested, completed);
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::atomic<bool>* flag = Flag(kind);
  if (flag == nullptr) return CUPTI_ERROR_NOT_SUPPORTED;
  flag->store(true);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    const ncclsimKernelTap tap{Launched, Ran, nullptr};
    ncclsimSetKernelTap(&tap);
  }
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::atomic<bool>* flag = Flag(kind);
  if (flag == nullptr) return CUPTI_ERROR_NOT_SUPPORTED;
  flag->store(false);
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityGetNextRecord(
    uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t* next = buffer;
  if (*record != nullptr) {
    const size_t bytes = ncclsim::cupti::RecordBytes((*record)->kind);
    if (bytes == 0) return CUPTI_ERROR_INVALID_KIND;
    next = reinterpret_cast<uint8_t*>(*record) + bytes;
  }
  if (next + sizeof(CUpti_Activity) > buffer + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityFlushAll(uint32_t /*flag*/) {
  Log().Flush();
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityGetNumDroppedRecords(
    CUcontext /*context*/, uint32_t /*stream_id*/, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = Log().TakeDropped();
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityPushExternalCorrelationId(
    CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (!ValidKind(kind)) return CUPTI_ERROR_INVALID_PARAMETER;
  t_external[kind].push_back(id);
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiActivityPopExternalCorrelationId(
    CUpti_ExternalCorrelationKind kind, uint64_t* last_id) {
  if (!ValidKind(kind)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (t_external[kind].empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last_id != nullptr) *last_id = t_external[kind].back();
  t_external[kind].pop_back();
  return CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) CUptiResult cuptiGetResultString(CUptiResult result,
                                                                        const char** text) {
  if (text == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *text = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_UNKNOWN:
      *text = "CUPTI_ERROR_UNKNOWN";
      break;
    default:
      *text = "CUPTI_ERROR (emulated)";
  }
  return CUPTI_SUCCESS;
}

}  // extern "C"
