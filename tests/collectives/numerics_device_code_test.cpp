// The library carries the numerics kernels (collectives/kernels/numerics.cu) for the GPUs the
// other kernels claim: a fatbin (magic 0xBA55ED50) naming every entry point the host side will
// look up, 16-byte aligned as cuModuleLoadData wants it; and the launch shape for a buffer.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "collectives/numerics/numerics_fatbin.h"
#include "collectives/numerics/numerics_kernel_args.h"

namespace ncclscope::collectives {
namespace {

TEST(NumericsDeviceCode, TheLibraryCarriesEveryScanKernelAndTheHash) {
  const DeviceImage img = NumericsFatbin();
  if (img.size == 0) GTEST_SKIP() << "built without nvcc: no device code to check";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(img.data) % 16, 0u);
  uint32_t magic = 0;
  ASSERT_GE(img.size, sizeof(magic));
  std::memcpy(&magic, img.data, sizeof(magic));
  EXPECT_EQ(magic, 0xBA55ED50u);
  const std::string_view bytes(reinterpret_cast<const char*>(img.data), img.size);
  for (const char* name : kNumericScanKernelNames) {
    EXPECT_NE(bytes.find(name), std::string_view::npos) << name;
  }
  EXPECT_NE(bytes.find(kContentHashKernelName), std::string_view::npos);
}

// The grid the probe will launch for a buffer: one 16-byte pack per thread up to a full GPU.
TEST(NumericsLaunch, OnePackPerThreadUpToAFullGpuAndNeverNoBlock) {
  EXPECT_EQ(NumericsLaunchShape(0, 132).blocks, 1u);
  EXPECT_EQ(NumericsLaunchShape(0, 132).threads, kNumericsThreads);
  EXPECT_EQ(NumericsLaunchShape(uint64_t{16} * kNumericsThreads, 132).blocks, 1u);
  EXPECT_EQ(NumericsLaunchShape(uint64_t{16} * kNumericsThreads + 1, 132).blocks, 2u);
  EXPECT_EQ(NumericsLaunchShape(uint64_t{1} << 30, 132).blocks, 132 * kNumericsBlocksPerSm);
  EXPECT_EQ(NumericsLaunchShape(~uint64_t{0}, 0).blocks, kNumericsBlocksPerSm);
  EXPECT_EQ(NumericsLaunchShape(~uint64_t{0}, 0xFFFFFFFFu).blocks, 0x7FFFFFFFu);
  EXPECT_EQ(kNumericsThreads % 32, 0u);
}

}  // namespace
}  // namespace ncclscope::collectives
