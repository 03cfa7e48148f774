#include "plugin/cupti/cupti_api.h"

#include <dlfcn.h>

namespace ncclscope::plugin {
namespace {

template <typename F>
bool Bind(void* handle, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) *error = std::string("symbol ") + name + " missing from CUPTI";
  return *out != nullptr;
}

}  // namespace

bool LoadCupti(const std::string& library, CuptiApi* api, std::string* error) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  CuptiApi a;
  if (!Bind(handle, "cuptiActivityRegisterCallbacks", &a.register_callbacks, error) ||
      !Bind(handle, "cuptiActivityEnable", &a.enable, error) ||
      !Bind(handle, "cuptiActivityDisable", &a.disable, error) ||
      !Bind(handle, "cuptiActivityGetNextRecord", &a.get_next_record, error) ||
      !Bind(handle, "cuptiActivityFlushAll", &a.flush_all, error) ||
      !Bind(handle, "cuptiActivityGetNumDroppedRecords", &a.dropped_records, error) ||
      !Bind(handle, "cuptiActivityPushExternalCorrelationId", &a.push_external, error) ||
      !Bind(handle, "cuptiActivityPopExternalCorrelationId", &a.pop_external, error)) {
    return false;
  }
  a.result_string =
      reinterpret_cast<decltype(a.result_string)>(dlsym(handle, "cuptiGetResultString"));
  *api = a;
  return true;
}

std::string CuptiResultText(const CuptiApi& api, CUptiResult result) {
  std::string number = std::to_string(static_cast<int>(result));
  const char* text = nullptr;
  if (api.result_string == nullptr || api.result_string(result, &text) != CUPTI_SUCCESS ||
      text == nullptr) {
    return number;
  }
  return std::string(text) + " (" + number + ")";
}

}  // namespace ncclscope::plugin
