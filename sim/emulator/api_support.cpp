#include "sim/emulator/api_support.h"

#include <cstdarg>
#include <cstdio>

#include <cuda.h>

namespace ncclsim {

namespace {
thread_local char t_last_error[256] = "";
}

ncclResult_t failWith(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_last_error, sizeof(t_last_error), fmt, ap);
  va_end(ap);
  return code;
}

const char* lastErrorText() {
  return t_last_error;
}

int currentCudaDevice() {
  CUdevice dev = 0;
  return cuCtxGetDevice(&dev) == CUDA_SUCCESS ? int(dev) : 0;
}

}  // namespace ncclsim
