// The NaN/Inf scan of a collective's buffer (docs/collectives.md "Numerics passes"): how
// each NCCL floating-point type marks a non-finite element, and one thread's share of a scan of a
// buffer launched as a grid. The CUDA kernel (kernels/numerics.cu) and its CPU twin
// (numerics_twin.cpp) both run ScanThreadShare, so they classify, count and pick the first index
// alike. Plain C++ that nvcc compiles for the device too: no library calls.
#pragma once

#include <cstdint>

#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// What a scan looks for in a buffer of an ncclDataType_t. kInteger: the integer types, which have
// no NaN or Inf (nothing to scan).
enum class NumericFormat : uint8_t { kInteger, kFp16, kFp32, kFp64, kBf16, kFp8E4m3, kFp8E5m2 };

// The format of NCCL's ncclDataType_t `nccl_dtype` (nccl.h: ncclInt8 0 .. ncclFloat8e5m2 11);
// false for any other value. Pure, thread-safe.
bool NumericFormatOf(int32_t nccl_dtype, NumericFormat* out) noexcept;
// "integer", "fp16", "fp32", "fp64", "bf16", "fp8e4m3", "fp8e5m2". Static storage.
const char* NumericFormatName(NumericFormat f) noexcept;

// Bytes per element of a scanned format; 0 for kInteger (never scanned).
NCCLSCOPE_HOST_DEVICE constexpr uint32_t ElementBytes(NumericFormat f) {
  switch (f) {
    case NumericFormat::kFp64:
      return 8;
    case NumericFormat::kFp32:
      return 4;
    case NumericFormat::kFp16:
    case NumericFormat::kBf16:
      return 2;
    case NumericFormat::kFp8E4m3:
    case NumericFormat::kFp8E5m2:
      return 1;
    default:
      return 0;
  }
}

enum class ElementClass : uint8_t { kFinite, kInf, kNaN };

// IEEE-style: with the sign cleared, the all-ones exponent with a zero fraction is Inf and with
// any other fraction NaN (quiet or signalling, any payload); everything below, denormals and
// zeros of either sign included, is finite.
NCCLSCOPE_HOST_DEVICE constexpr ElementClass ClassifyMagnitude(uint64_t magnitude, uint64_t inf) {
  if (magnitude < inf) return ElementClass::kFinite;
  return magnitude == inf ? ElementClass::kInf : ElementClass::kNaN;
}

// The class of one element of format f from its bits in the low ElementBytes(f) bytes of `bits`
// (higher bits are ignored, so a word may be passed shifted). Encodings:
//   fp64 1.11.52, fp32 1.8.23, fp16 1.5.10, bf16 1.8.7, fp8 e5m2 1.5.2: IEEE (Inf and NaNs);
//   fp8 e4m3 1.4.3, the OCP "e4m3fn" flavour NCCL's __nv_fp8_e4m3 uses: no Inf; NaN only at
//   S.1111.111 (0x7F, 0xFF); S.1111.000-110 are finite (up to 448).
NCCLSCOPE_HOST_DEVICE constexpr ElementClass ClassifyElement(NumericFormat f, uint64_t bits) {
  switch (f) {
    case NumericFormat::kFp64:
      return ClassifyMagnitude(bits & 0x7FFFFFFFFFFFFFFFull, 0x7FF0000000000000ull);
    case NumericFormat::kFp32:
      return ClassifyMagnitude(bits & 0x7FFFFFFFull, 0x7F800000ull);
    case NumericFormat::kFp16:
      return ClassifyMagnitude(bits & 0x7FFFull, 0x7C00ull);
    case NumericFormat::kBf16:
      return ClassifyMagnitude(bits & 0x7FFFull, 0x7F80ull);
    case NumericFormat::kFp8E5m2:
      return ClassifyMagnitude(bits & 0x7Full, 0x7Cull);
    case NumericFormat::kFp8E4m3:
      return (bits & 0x7Full) == 0x7Full ? ElementClass::kNaN : ElementClass::kFinite;
    default:
      return ElementClass::kFinite;
  }
}

// The first index of a scan that found no NaN or Inf.
inline constexpr uint64_t kNoNonFinite = ~0ull;

// What a scan found: the kernel's result in memory the host supplies (and reads after the
// launch), one thread's or one block's partial on the way. Start from EmptyScan(): the kernel
// adds its counts (atomicAdd) and lowers first_nonfinite (atomicMin) block by block.
struct NumericScanResult {
  uint64_t nan_count;
  uint64_t inf_count;
  uint64_t first_nonfinite;  // lowest element index that is NaN or Inf; kNoNonFinite: none
};

NCCLSCOPE_HOST_DEVICE constexpr NumericScanResult EmptyScan() {
  return {0, 0, kNoNonFinite};
}

NCCLSCOPE_HOST_DEVICE inline void CountElement(ElementClass c, uint64_t index,
                                               NumericScanResult* r) {
  if (c == ElementClass::kFinite) return;
  if (c == ElementClass::kNaN) {
    ++r->nan_count;
  } else {
    ++r->inf_count;
  }
  if (index < r->first_nonfinite) r->first_nonfinite = index;
}

NCCLSCOPE_HOST_DEVICE inline void MergeScan(const NumericScanResult& part, NumericScanResult* r) {
  r->nan_count += part.nan_count;
  r->inf_count += part.inf_count;
  if (part.first_nonfinite < r->first_nonfinite) r->first_nonfinite = part.first_nonfinite;
}

// The bytes a scan or hash reads, in 16-byte packs and in little-endian runs of 1..8 bytes: the
// device reads global memory, the twin host memory. Requirements on a Bytes type B:
//   void B::Pack(uint64_t k, uint64_t* lo, uint64_t* hi)  bytes [16k, 16k+16) as two LE words
//                                                          (only called when PackAligned())
//   uint64_t B::Run(uint64_t offset, uint32_t n)           bytes [offset, offset+n), LE, n <= 8
//   bool B::PackAligned()                                  the buffer starts on 16 bytes
// Everything is read, nothing written: the passes are read-only.

#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
// One thread's share of the scan of `count` elements of format F by a grid of `threads` threads
// (blocks x threads per block), this being thread `thread` (blockIdx x blockDim + threadIdx):
// when the buffer starts on 16 bytes, whole packs k = thread, thread + threads, ...; then the
// elements after the last whole pack (all of them when it does not), one per thread in the same
// stride. Every element is visited by exactly one thread of any grid, so the merged result does
// not depend on the grid.
template <NumericFormat F, typename Bytes>
NCCLSCOPE_HOST_DEVICE NumericScanResult ScanThreadShare(Bytes& bytes, uint64_t count,
                                                        uint64_t thread, uint64_t threads) {
  constexpr uint32_t kBytes = ElementBytes(F);
  constexpr uint32_t kPerWord = 8 / kBytes;
  constexpr uint32_t kShift = 8 * kBytes;
  static_assert(kBytes != 0, "integer buffers are not scanned");
  NumericScanResult r = EmptyScan();
  uint64_t packed = 0;
  if (bytes.PackAligned()) {
    const uint64_t packs = count / (uint64_t{2} * kPerWord);
    for (uint64_t k = thread; k < packs; k += threads) {
      uint64_t word[2];
      bytes.Pack(k, &word[0], &word[1]);
      for (uint32_t w = 0; w < 2; ++w) {
        const uint64_t first = (2 * k + w) * kPerWord;
        for (uint32_t e = 0; e < kPerWord; ++e) {
          CountElement(ClassifyElement(F, word[w] >> (e * kShift)), first + e, &r);
        }
      }
    }
    packed = packs * 2 * kPerWord;
  }
  for (uint64_t i = packed + thread; i < count; i += threads) {
    CountElement(ClassifyElement(F, bytes.Run(i * kBytes, kBytes)), i, &r);
  }
  return r;
}

}  // namespace ncclscope::collectives
