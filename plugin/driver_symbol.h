// Looking up one function of the dlopen()ed CUDA driver into a table slot, shared by the driver
// tables of the completion tracker (cuda_driver.h) and of ncclscope's own collectives
// (accel_driver.h).
#pragma once

#include <dlfcn.h>

#include <string>

namespace ncclscope::plugin {

// Fills *out with `name` from `handle`; false with *error naming the missing symbol.
template <typename F>
bool BindDriverSymbol(void* handle, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) *error = std::string("symbol ") + name + " missing from the CUDA driver";
  return *out != nullptr;
}

}  // namespace ncclscope::plugin
