// What the records the probe writes from profiler and CUPTI events (not from a call) say, decoded
// from their packed fields (trace/record.h, "Per-op meaning"): device starts, proxy progress,
// kernel channels, the activation mask, device compute. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "trace/record.h"

namespace ncclscope::tools {

// True for the record types decoded here.
bool IsProbeEventRecord(const trace::RecordData& r);
// " channel=1 nccl_seq=3 gpu_start=..." for such a record; "" for any other.
std::string ProbeFieldsText(const trace::RecordData& r);
// The same as JSON members, added to *out (which keeps the raw fields).
void AddProbeFieldsJson(const trace::RecordData& r, nlohmann::json* out);
// NCCL's name of a proxy step state ("SendPeerWait"), "none" for 0, "state<N>" when unknown.
std::string ProxyStateName(uint32_t state);

}  // namespace ncclscope::tools
