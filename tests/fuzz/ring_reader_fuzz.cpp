// Fuzz target: any bytes given to the ring parser yield a snapshot or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/ring_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto snapshot = ncclscope::trace::ParseRing(data, size, "fuzz.ring", &error);
  if (!snapshot && error.empty()) __builtin_trap();  // a rejection must always say why
  return 0;
}
