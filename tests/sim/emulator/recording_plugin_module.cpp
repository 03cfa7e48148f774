// A profiler plugin module for the loader tests, built under several file names. Its init
// reports the module's name to the test executable (simrecModuleInit, exported by it) and opts
// the communicator out; SIMREC_ONLY_V3 builds one that exports nothing but ncclProfiler_v3.
#include <nccl.h>

#include "sim/emulator/profiler_abi.h"

namespace pabi = ncclsim::profabi;

extern "C" void simrecModuleInit(const char* module);

namespace {

ncclResult_t init(void** ctx, uint64_t, int* mask, const char*, int, int, int, pabi::Logger) {
  simrecModuleInit(SIMREC_MODULE_NAME);
  *ctx = nullptr;
  *mask = 0;
  return ncclSuccess;
}
ncclResult_t start(void*, void** h, pabi::Descr5*) {
  *h = nullptr;
  return ncclSuccess;
}
ncclResult_t stop(void*) {
  return ncclSuccess;
}
ncclResult_t record(void*, int, pabi::StateArgs*) {
  return ncclSuccess;
}
ncclResult_t finalize(void*) {
  return ncclSuccess;
}

}  // namespace

#ifdef SIMREC_ONLY_V3
// Only the name matters: the emulator must find it and say it does not emulate it.
extern "C" __attribute__((visibility("default")))
const pabi::Table5 ncclProfiler_v3 = {SIMREC_MODULE_NAME, init, start, stop, record, finalize};
#else
extern "C" __attribute__((visibility("default")))
const pabi::Table5 ncclProfiler_v5 = {SIMREC_MODULE_NAME, init, start, stop, record, finalize};
#endif
