// Decoding CUPTI activity records into what the probe keeps: kernels (time, device, stream,
// whether NCCL's) and external correlations (CUPTI's launch id -> the launching call's key).
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "plugin/cupti/cupti_api.h"
#include "plugin/cupti/cupti_timeline.h"

namespace ncclscope::plugin {

struct DecodedActivity {
  std::vector<KernelActivity> kernels;
  std::vector<std::pair<uint32_t, uint64_t>> correlations;  // (correlationId, external id)
};

// Adds one record: kernel records (CUpti_ActivityKernel10, the layout of CUDA 13's CUPTI) and
// external correlations of kind `kind`; every other kind is skipped. A kernel whose end is not
// after its start (incomplete) is skipped. Pure.
void DecodeActivity(const CUpti_Activity* record, CUpti_ExternalCorrelationKind kind,
                    DecodedActivity* out);

// Every record of a completed buffer through api.get_next_record. Thread-safe (reads only the
// buffer).
void DecodeActivityBuffer(const CuptiApi& api, uint8_t* buffer, size_t valid_bytes,
                          CUpti_ExternalCorrelationKind kind, DecodedActivity* out);

}  // namespace ncclscope::plugin
