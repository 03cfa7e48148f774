// The part of CUPTI's activity API the CUPTI probe uses, as a table of function pointers:
// libcupti is opened with dlopen at run time and never linked (design rules 3 and 4), and tests
// substitute a fake table or the emulator's libcupti.
#pragma once

#include <cupti_activity.h>

#include <string>

namespace ncclscope::plugin {

// The soname opened. The probe decodes kernel records as CUDA 13's CUpti_ActivityKernel10, the
// layout libcupti.so.13 hands out; another major version is not opened rather than misread.
inline constexpr const char* kCuptiLibrary = "libcupti.so.13";

struct CuptiApi {
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                    CUpti_BuffersCallbackCompleteFunc completed) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind kind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind kind) = nullptr;
  CUptiResult (*get_next_record)(uint8_t* buffer, size_t valid_bytes,
                                 CUpti_Activity** record) = nullptr;
  CUptiResult (*flush_all)(uint32_t flag) = nullptr;
  CUptiResult (*dropped_records)(CUcontext context, uint32_t stream_id, size_t* dropped) = nullptr;
  CUptiResult (*push_external)(CUpti_ExternalCorrelationKind kind, uint64_t id) = nullptr;
  CUptiResult (*pop_external)(CUpti_ExternalCorrelationKind kind, uint64_t* last_id) = nullptr;
  // Optional (null when missing): only for the warning's text.
  CUptiResult (*result_string)(CUptiResult result, const char** text) = nullptr;
};

// dlopen()s library (never closed) and fills *api. Returns false with *error set when the library
// or a required symbol is missing. Thread-safe (dlopen is).
bool LoadCupti(const std::string& library, CuptiApi* api, std::string* error);

// "CUPTI_ERROR_UNKNOWN (999)", or the number alone when the library cannot name it. Thread-safe.
std::string CuptiResultText(const CuptiApi& api, CUptiResult result);

}  // namespace ncclscope::plugin
