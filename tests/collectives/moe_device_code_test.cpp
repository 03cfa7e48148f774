// The library carries the MoE kernels (collectives/kernels/moe.cu) for the GPUs the other kernels
// serve, through the C API a framework loads them with (ncclscope_moe_fatbin): a fatbin of an
// sm_80 and an sm_90 cubin and sm_90 PTX naming both entry points, and not the other kernels'.
// Walked as device_code_test.cpp walks the AllReduce and all-to-all fatbins (header magic
// 0xBA55ED50, then entries each with kind, size and architecture): this image has no cuobjdump.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string_view>
#include <utility>

#include "collectives/alltoall_kernel_args.h"
#include "collectives/include/ncclscope/moe.h"

namespace ncclscope::collectives {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindCubin = 2;

template <typename T>
T At(const unsigned char* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof(v));
  return v;
}

// (kind, sm) of every entry; empty when the bytes are not a well-formed fatbin.
std::set<std::pair<uint16_t, uint32_t>> Entries(const unsigned char* data, size_t size) {
  std::set<std::pair<uint16_t, uint32_t>> out;
  if (size < 16 || At<uint32_t>(data, 0) != kFatbinMagic) return {};
  const size_t header = At<uint16_t>(data, 6);
  const size_t end = header + At<uint64_t>(data, 8);
  if (end > size) return {};
  for (size_t off = header; off + 0x20 <= end;) {
    const uint32_t entry_header = At<uint32_t>(data, off + 4);
    const uint64_t bytes = At<uint64_t>(data, off + 8);
    if (entry_header < 0x20 || bytes > end - off - entry_header) return {};
    out.insert({At<uint16_t>(data, off), At<uint32_t>(data, off + 0x1C)});
    off += entry_header + bytes;
  }
  return out;
}

TEST(DeviceCode, TheMoeKernelsAreCarriedForTheSameGpus) {
  size_t size = 99;
  const auto* data = static_cast<const unsigned char*>(ncclscope_moe_fatbin(&size));
  if (data == nullptr) {
    EXPECT_EQ(size, 0u);
    GTEST_SKIP() << "built without nvcc: no device code to check";
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 16, 0u);
  EXPECT_EQ(Entries(data, size), (std::set<std::pair<uint16_t, uint32_t>>{
                                     {kKindCubin, 80}, {kKindCubin, 90}, {kKindPtx, 90}}));
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  EXPECT_NE(bytes.find(NCCLSCOPE_MOE_DISPATCH_KERNEL), std::string_view::npos);
  EXPECT_NE(bytes.find(NCCLSCOPE_MOE_COMBINE_KERNEL), std::string_view::npos);
  EXPECT_EQ(bytes.find(kAlltoAllKernelName), std::string_view::npos);
}

}  // namespace
}  // namespace ncclscope::collectives
