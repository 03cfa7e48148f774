#include "plugin/cupti/cupti_decode.h"

namespace ncclscope::plugin {

void DecodeActivity(const CUpti_Activity* record, CUpti_ExternalCorrelationKind kind,
                    DecodedActivity* out) {
  if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
      record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (k->end <= k->start) return;
    KernelActivity a;
    a.start = k->start;
    a.end = k->end;
    a.correlation = k->correlationId;
    a.device = k->deviceId;
    a.stream = k->streamId;
    a.nccl = IsNcclKernelName(k->name);
    out->kernels.push_back(a);
  } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
    const auto* c = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
    if (c->externalKind == kind) out->correlations.emplace_back(c->correlationId, c->externalId);
  }
}

void DecodeActivityBuffer(const CuptiApi& api, uint8_t* buffer, size_t valid_bytes,
                          CUpti_ExternalCorrelationKind kind, DecodedActivity* out) {
  CUpti_Activity* record = nullptr;
  while (api.get_next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS && record != nullptr) {
    DecodeActivity(record, kind, out);
  }
}

}  // namespace ncclscope::plugin
