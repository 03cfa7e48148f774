// ncclscope's AllReduce kernels for one node over peer memory (docs/collectives.md): one-shot and
// two-shot, sum over fp16, bf16 and fp32, every rank reducing in the fixed order 0..n-1 in fp32 so
// that all get the same bits. collectives/twins/allreduce_twin.cpp is their CPU twin, step for
// step: the same grid-stride mapping of 16-byte packs to (block, thread), the same barriers and
// epochs (collectives/planner/epoch.h), the same fp32 accumulation from rank 0's value and the same
// narrowing. Change one and the other together.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "collectives/kernels/device_elements.cuh"
#include "collectives/kernels/device_steps.cuh"
#include "collectives/planner/allreduce_kernel_args.h"

namespace ncclscope::collectives {
namespace {

// One barrier of this block (device_steps.cuh).
__device__ bool Cross(const AllReduceKernelArgs& a, Barrier which, uint64_t deadline) {
  return CrossBarrier({a.signal, a.stall, a.rank, a.nranks, a.epoch}, which, deadline);
}

template <typename D>
__device__ void ReducePack(const AllReduceKernelArgs& a, uint64_t pack, unsigned char* out) {
  float acc[D::kPerPack];
  Pack p;
  p.raw = reinterpret_cast<const uint4*>(a.source[0])[pack];
  const auto* v = reinterpret_cast<const typename D::T*>(p.bytes);
#pragma unroll
  for (int e = 0; e < D::kPerPack; ++e) acc[e] = D::Load(v[e]);
  for (int q = 1; q < a.nranks; ++q) {
    p.raw = reinterpret_cast<const uint4*>(a.source[q])[pack];
#pragma unroll
    for (int e = 0; e < D::kPerPack; ++e) acc[e] += D::Load(v[e]);
  }
  auto* w = reinterpret_cast<typename D::T*>(p.bytes);
#pragma unroll
  for (int e = 0; e < D::kPerPack; ++e) w[e] = D::Store(acc[e]);
  reinterpret_cast<uint4*>(out)[pack] = p.raw;
}

__device__ void CopyIn(const AllReduceKernelArgs& a, uint64_t pack) {
  reinterpret_cast<uint4*>(a.staging)[pack] = reinterpret_cast<const uint4*>(a.input)[pack];
}

__device__ uint64_t SliceBeginOf(const AllReduceKernelArgs& a, int r) {
  return a.packs * static_cast<uint64_t>(r) / static_cast<uint64_t>(a.nranks);
}

template <typename D>
__device__ void OneShot(const AllReduceKernelArgs& a) {
  const uint64_t deadline = GlobalTimerNs() + a.timeout_ns;
  if (a.copy_in) ForEachPack(0, a.packs, [&](uint64_t k) { CopyIn(a, k); });
  if (!Cross(a, Barrier::kStart, deadline)) return;
  ForEachPack(0, a.packs, [&](uint64_t k) { ReducePack<D>(a, k, a.output); });
  Cross(a, Barrier::kEnd, deadline);
}

template <typename D>
__device__ void TwoShot(const AllReduceKernelArgs& a) {
  const uint64_t deadline = GlobalTimerNs() + a.timeout_ns;
  auto slice = [&](int s, auto f) {
    const uint64_t begin = SliceBeginOf(a, s);
    ForEachPack(begin, SliceBeginOf(a, s + 1) - begin, f);
  };
  if (a.copy_in) {
    for (int s = 0; s < a.nranks; ++s) slice(s, [&](uint64_t k) { CopyIn(a, k); });
  }
  if (!Cross(a, Barrier::kStart, deadline)) return;
  unsigned char* mine = a.scratch[a.rank];
  slice(a.rank, [&](uint64_t k) { ReducePack<D>(a, k, mine); });
  if (!Cross(a, Barrier::kMiddle, deadline)) return;
  for (int s = 0; s < a.nranks; ++s) {
    const unsigned char* reduced = a.scratch[s];
    slice(s, [&](uint64_t k) {
      reinterpret_cast<uint4*>(a.output)[k] = reinterpret_cast<const uint4*>(reduced)[k];
    });
  }
  Cross(a, Barrier::kEnd, deadline);
}

}  // namespace
}  // namespace ncclscope::collectives

using ncclscope::collectives::AllReduceKernelArgs;
namespace nc = ncclscope::collectives;

// The entry points (allreduce_kernel_args.h, kAllReduceKernelNames): plain C names the driver API
// finds with cuModuleGetFunction.
extern "C" __global__ void ncclscope_allreduce_one_shot_fp16(AllReduceKernelArgs a) {
  nc::OneShot<nc::Fp16>(a);
}
extern "C" __global__ void ncclscope_allreduce_one_shot_fp32(AllReduceKernelArgs a) {
  nc::OneShot<nc::Fp32>(a);
}
extern "C" __global__ void ncclscope_allreduce_one_shot_bf16(AllReduceKernelArgs a) {
  nc::OneShot<nc::Bf16>(a);
}
extern "C" __global__ void ncclscope_allreduce_two_shot_fp16(AllReduceKernelArgs a) {
  nc::TwoShot<nc::Fp16>(a);
}
extern "C" __global__ void ncclscope_allreduce_two_shot_fp32(AllReduceKernelArgs a) {
  nc::TwoShot<nc::Fp32>(a);
}
extern "C" __global__ void ncclscope_allreduce_two_shot_bf16(AllReduceKernelArgs a) {
  nc::TwoShot<nc::Bf16>(a);
}
