// The library carries the kernels' device code for the GPUs it claims (docs/collectives.md): each
// embedded fatbin (AllReduce, all-to-all, exchange, MoE) holds sm_80, sm_90 and sm_100 cubins
// and sm_90 PTX, with every entry point the host side will look up. Checked by walking the fatbin's
// entries (the layout nvcc writes: a 16-byte header with magic 0xBA55ED50, then entries each with
// its own header giving kind, size and architecture), since this image has no cuobjdump.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/device_code/device_code.h"
#include "collectives/include/ncclscope/moe.h"
#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/alltoall_kernel_args.h"
#include "collectives/planner/exchange_kernel_args.h"

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
std::set<std::pair<uint16_t, uint32_t>> Entries(const DeviceImage& img) {
  std::set<std::pair<uint16_t, uint32_t>> out;
  if (img.size < 16 || At<uint32_t>(img.data, 0) != kFatbinMagic) return {};
  const size_t header = At<uint16_t>(img.data, 6);
  const size_t end = header + At<uint64_t>(img.data, 8);
  if (end > img.size) return {};
  for (size_t off = header; off + 0x20 <= end;) {
    const uint16_t kind = At<uint16_t>(img.data, off);
    const uint32_t entry_header = At<uint32_t>(img.data, off + 4);
    const uint64_t size = At<uint64_t>(img.data, off + 8);
    const uint32_t sm = At<uint32_t>(img.data, off + 0x1C);
    if (entry_header < 0x20 || size > end - off - entry_header) return {};
    out.insert({kind, sm});
    off += entry_header + size;
  }
  return out;
}

// The image is a fatbin of sm_80, sm_90 and sm_100 cubins and sm_90 PTX, 16-byte aligned, naming
// every entry point in `names`.
void ExpectKernels(const DeviceImage& img, const std::vector<const char*>& names) {
  EXPECT_EQ(reinterpret_cast<uintptr_t>(img.data) % 16, 0u);
  const auto entries = Entries(img);
  EXPECT_EQ(entries, (std::set<std::pair<uint16_t, uint32_t>>{
                         {kKindCubin, 80}, {kKindCubin, 90}, {kKindCubin, 100}, {kKindPtx, 90}}));
  const std::string_view bytes(reinterpret_cast<const char*>(img.data), img.size);
  for (const char* name : names) {
    EXPECT_NE(bytes.find(name), std::string_view::npos) << name;
  }
}

TEST(DeviceCode, TheLibraryCarriesSm80Sm90AndSm100KernelsAndPtx) {
  const DeviceImage img = AllReduceFatbin();
  if (img.size == 0) GTEST_SKIP() << "built without nvcc: no device code to check";
  std::vector<const char*> names;
  for (const auto& per_algorithm : kAllReduceKernelNames) {
    for (const char* name : per_algorithm) names.push_back(name);
  }
  ExpectKernels(img, names);
}

TEST(DeviceCode, TheAlltoAllKernelIsCarriedForTheSameGpus) {
  const DeviceImage img = AlltoAllFatbin();
  if (img.size == 0) GTEST_SKIP() << "built without nvcc: no device code to check";
  ExpectKernels(img, {kAlltoAllKernelName});
  // Its own image: the AllReduce kernels are not in it, nor it in theirs.
  const std::string_view bytes(reinterpret_cast<const char*>(img.data), img.size);
  EXPECT_EQ(bytes.find(kAllReduceKernelNames[0][0]), std::string_view::npos);
}

TEST(DeviceCode, TheExchangeKernelIsCarriedForTheSameGpus) {
  const DeviceImage img = ExchangeFatbin();
  if (img.size == 0) GTEST_SKIP() << "built without nvcc: no device code to check";
  ExpectKernels(img, {kExchangeKernelName});
  const std::string_view bytes(reinterpret_cast<const char*>(img.data), img.size);
  EXPECT_EQ(bytes.find(kAlltoAllKernelName), std::string_view::npos);
}

// The MoE kernels, through the C API a framework loads them with (ncclscope_moe_fatbin).
TEST(DeviceCode, TheMoeKernelsAreCarriedForTheSameGpus) {
  size_t size = 99;
  const auto* data = static_cast<const unsigned char*>(ncclscope_moe_fatbin(&size));
  if (data == nullptr) {
    EXPECT_EQ(size, 0u);
    GTEST_SKIP() << "built without nvcc: no device code to check";
  }
  const DeviceImage img{data, size};
  ExpectKernels(img, {NCCLSCOPE_MOE_DISPATCH_KERNEL, NCCLSCOPE_MOE_COMBINE_KERNEL});
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  EXPECT_EQ(bytes.find(kAlltoAllKernelName), std::string_view::npos);
}

}  // namespace
}  // namespace ncclscope::collectives
