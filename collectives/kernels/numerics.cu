// ncclscope's numerics passes (docs/collectives.md "Numerics passes"): the NaN/Inf scan
// of a buffer of one floating-point format and the content hash of a buffer's bytes. Both are
// read-only grid-stride passes: each thread runs its share (numerics_scan.h's ScanThreadShare,
// numerics_hash.h's HashThreadShare, the same code the CPU twin numerics_twin.cpp runs), the block
// reduces the threads' partials, and one thread per block adds them to the result the host
// supplied with one atomic each (atomicAdd for counts and the hash, atomicMin for the first
// index), so any grid gives the same result.
#include <cstdint>

#include "collectives/numerics/numerics_hash.h"
#include "collectives/numerics/numerics_kernel_args.h"
#include "collectives/numerics/numerics_scan.h"

namespace ncclscope::collectives {
namespace {

// Global memory as numerics_scan.h's Bytes: 16-byte packs through the read-only path; runs of
// 1..8 bytes with one natural load when aligned for it, byte by byte otherwise (a buffer may start
// anywhere: a misaligned wide load would fault the job's context).
struct DeviceBytes {
  const unsigned char* data;

  __device__ bool PackAligned() const { return reinterpret_cast<uintptr_t>(data) % 16 == 0; }

  __device__ void Pack(uint64_t k, uint64_t* lo, uint64_t* hi) const {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(data) + k);
    *lo = static_cast<uint64_t>(v.x) | static_cast<uint64_t>(v.y) << 32;
    *hi = static_cast<uint64_t>(v.z) | static_cast<uint64_t>(v.w) << 32;
  }

  __device__ uint64_t Run(uint64_t offset, uint32_t n) const {
    const unsigned char* p = data + offset;
    const auto at = reinterpret_cast<uintptr_t>(p);
    if (n == 8 && at % 8 == 0) return __ldg(reinterpret_cast<const unsigned long long*>(p));
    if (n == 4 && at % 4 == 0) return __ldg(reinterpret_cast<const unsigned int*>(p));
    if (n == 2 && at % 2 == 0) return __ldg(reinterpret_cast<const unsigned short*>(p));
    uint64_t v = 0;
    for (uint32_t b = 0; b < n; ++b) v |= static_cast<uint64_t>(__ldg(p + b)) << (8 * b);
    return v;
  }
};

__device__ uint64_t GridThread() {
  return static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ uint64_t GridThreads() {
  return static_cast<uint64_t>(gridDim.x) * blockDim.x;
}

struct Sum {
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a + b; }
};
struct Min {
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a < b ? a : b; }
};

// The block's reduction of v with op, valid in thread 0 (blockDim.x a multiple of 32, at most
// 1024: kNumericsThreads). Every thread of the block must call it.
template <typename Op>
__device__ uint64_t BlockReduce(uint64_t v, Op op) {
  __shared__ uint64_t per_warp[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    v = op(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
  }
  const uint32_t warp = threadIdx.x / 32;
  const uint32_t warps = blockDim.x / 32;
  __syncthreads();  // per_warp may still be read by a previous reduction
  if (threadIdx.x % 32 == 0) per_warp[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (uint32_t w = 1; w < warps; ++w) v = op(v, per_warp[w]);
  }
  return v;
}

template <NumericFormat F>
__device__ void Scan(const NumericScanArgs& a) {
  DeviceBytes bytes{a.data};
  const NumericScanResult mine = ScanThreadShare<F>(bytes, a.count, GridThread(), GridThreads());
  const uint64_t nan = BlockReduce(mine.nan_count, Sum());
  const uint64_t inf = BlockReduce(mine.inf_count, Sum());
  const uint64_t first = BlockReduce(mine.first_nonfinite, Min());
  if (threadIdx.x != 0) return;
  auto* out = reinterpret_cast<unsigned long long*>(a.result);
  static_assert(sizeof(NumericScanResult) == 3 * sizeof(unsigned long long));
  if (nan != 0) atomicAdd(&out[0], nan);
  if (inf != 0) atomicAdd(&out[1], inf);
  if (first != kNoNonFinite) atomicMin(&out[2], first);
}

__device__ void Hash(const ContentHashArgs& a) {
  DeviceBytes bytes{a.data};
  const uint64_t sum =
      BlockReduce(HashThreadShare(bytes, a.length, GridThread(), GridThreads()), Sum());
  if (threadIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&a.result->sum), sum);
}

}  // namespace
}  // namespace ncclscope::collectives

// The entry points (numerics_kernel_args.h, kNumericScanKernelNames, kContentHashKernelName):
// plain C names the driver API looks up.
using ncclscope::collectives::ContentHashArgs;
using ncclscope::collectives::NumericFormat;
using ncclscope::collectives::NumericScanArgs;

extern "C" __global__ void ncclscope_numerics_scan_fp16(NumericScanArgs a) {
  ncclscope::collectives::Scan<NumericFormat::kFp16>(a);
}
extern "C" __global__ void ncclscope_numerics_scan_fp32(NumericScanArgs a) {
  ncclscope::collectives::Scan<NumericFormat::kFp32>(a);
}
extern "C" __global__ void ncclscope_numerics_scan_fp64(NumericScanArgs a) {
  ncclscope::collectives::Scan<NumericFormat::kFp64>(a);
}
extern "C" __global__ void ncclscope_numerics_scan_bf16(NumericScanArgs a) {
  ncclscope::collectives::Scan<NumericFormat::kBf16>(a);
}
extern "C" __global__ void ncclscope_numerics_scan_fp8e4m3(NumericScanArgs a) {
  ncclscope::collectives::Scan<NumericFormat::kFp8E4m3>(a);
}
extern "C" __global__ void ncclscope_numerics_scan_fp8e5m2(NumericScanArgs a) {
  ncclscope::collectives::Scan<NumericFormat::kFp8E5m2>(a);
}
extern "C" __global__ void ncclscope_numerics_hash(ContentHashArgs a) {
  ncclscope::collectives::Hash(a);
}
