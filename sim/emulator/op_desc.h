// What a collective or point-to-point call asked for, as recorded at the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda.h>
#include <nccl.h>

#include "sim/emulator/comm.h"
#include "sim/emulator/profiler.h"
#include "sim/emulator/reduce_kernels.h"

namespace ncclsim {

enum class OpKind : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
};

struct OpDesc {
  OpKind kind = OpKind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count =
      0;  // as passed: per-rank count for AllGather/ReduceScatter/AlltoAll/Gather/Scatter
  ncclDataType_t dtype = ncclInt8;
  int root = 0;  // root, or peer for Send/Recv
  RedKind red = RedKind::kSum;
  uint8_t scalar[8] = {};            // PreMulSum factor, host-immediate
  const void* scalar_ptr = nullptr;  // PreMulSum factor read when the op runs (device residence)
  Comm* comm = nullptr;
  CUstream stream = nullptr;
  std::shared_ptr<ProfOp> prof;  // its profiled tasks; null when no plugin is loaded
  int64_t flip_bit = -1;  // output bit inverted when the op completes (output_faults.h); -1: none
};

}  // namespace ncclsim
