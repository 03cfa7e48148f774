#include "collectives/numerics/numerics_kernel_args.h"

namespace ncclscope::collectives {
namespace {

// CUDA's limit on gridDim.x.
constexpr uint64_t kMaxGridBlocks = 0x7FFFFFFF;

}  // namespace

NumericsLaunch NumericsLaunchShape(uint64_t length, uint32_t multiprocessors) noexcept {
  const uint64_t resident =
      static_cast<uint64_t>(multiprocessors == 0 ? 1 : multiprocessors) * kNumericsBlocksPerSm;
  const uint64_t packs = length / 16 + (length % 16 != 0 ? 1 : 0);
  uint64_t blocks = packs / kNumericsThreads + (packs % kNumericsThreads != 0 ? 1 : 0);
  if (blocks > resident) blocks = resident;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  if (blocks == 0) blocks = 1;
  return {static_cast<uint32_t>(blocks), kNumericsThreads};
}

}  // namespace ncclscope::collectives
