// A CUDA driver result as its name (CUDA_ERROR_INVALID_VALUE), for the rank program's messages.
#pragma once

#include <cuda.h>
#include <fmt/format.h>

#include <string>

namespace ncclscope::sim {

// Thread-safe (cuGetErrorName reads a static table).
inline std::string cuError(CUresult rc) {
  const char* s = nullptr;
  cuGetErrorName(rc, &s);
  return s != nullptr ? s : fmt::format("CUresult {}", static_cast<int>(rc));
}

}  // namespace ncclscope::sim
