// The expected result of a run: the CPU twins of the kernels (collectives/*_twin_kernel.h), entered
// as the kernels are (the same launch parameter and shape), one thread per rank over host memory
// that plays every rank's registered buffers. The fixed-order reduction makes the twins' output
// the bits a correct kernel must produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/gpu_check/cases.h"
#include "collectives/gpu_check/kernel_params.h"

namespace ncclscope::gpu_check {

// Not thread-safe: one Run at a time.
class TwinRanks {
 public:
  // Buffers of `bytes` per rank; the flags as after epoch first_epoch - 1.
  TwinRanks(int nranks, size_t bytes, uint32_t first_epoch);
  ~TwinRanks();
  TwinRanks(const TwinRanks&) = delete;
  TwinRanks& operator=(const TwinRanks&) = delete;

  // Runs the case's next call on every rank: inputs[r] (c.bytes) in, outputs[r] out. False when a
  // twin's wait expired (a bug of the check itself), with *why saying where.
  bool Run(const Case& c, const unsigned char* const* inputs, unsigned char* const* outputs,
           std::string* why);

 private:
  int nranks_;
  uint32_t epoch_;
  std::vector<std::vector<unsigned char>> staging_, scratch_;
  std::vector<std::unique_ptr<collectives::Signal>> signal_;
};

}  // namespace ncclscope::gpu_check
