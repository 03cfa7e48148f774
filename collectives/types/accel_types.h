// The vocabulary of ncclscope's own collectives (docs/collectives.md): which element types and
// algorithms they have, and why a call goes to NCCL instead. Shared by the planner, the CPU twin
// of the kernels, the CUDA kernels and the interposer's routing. Plain enums: this header is
// included by device code too.
#pragma once

#include <cstddef>
#include <cstdint>

// Marks the small helpers the CUDA kernels and the CPU twin share.
#if defined(__CUDACC__)
#define NCCLSCOPE_HOST_DEVICE __host__ __device__
#else
#define NCCLSCOPE_HOST_DEVICE
#endif

namespace ncclscope::collectives {

// Element types the AllReduce kernels reduce (sum), with NCCL's ncclDataType_t numbers.
enum class Dtype : int32_t { kFp16 = 6, kFp32 = 7, kBf16 = 9 };
// NCCL's ncclDataType_t as an accelerated type; false for the types the kernels do not have.
bool DtypeOf(int32_t nccl_dtype, Dtype* out) noexcept;
size_t DtypeBytes(Dtype d) noexcept;
const char* DtypeName(Dtype d) noexcept;

// Every rank moves data in packs of 16 bytes (one 128-bit load or store per thread): the unit of
// layout, of slicing between ranks and of the thread mapping both stages of two-shot share.
inline constexpr size_t kPackBytes = 16;
// The largest communicator the kernels serve: one node.
inline constexpr int kMaxRanks = 8;

enum class Algorithm : uint8_t {
  kNccl,      // not ours: the call goes to NCCL unchanged
  kOneShot,   // every rank reads all ranks' inputs and reduces the whole buffer
  kTwoShot,   // reduce-scatter (rank r reduces slice r), then all-gather of the slices
  kPull,      // all-to-all: every rank reads its block of every rank's staging
              // (planner/alltoall_plan.h)
  kExchange,  // grouped sends/receives: per pair, chunks through the sender's staging slot
};
const char* AlgorithmName(Algorithm a) noexcept;

}  // namespace ncclscope::collectives
