// libncclscope.so exports the host twin of each of its kernels with its parameter size, under the
// names the emulated driver looks up (docs/emulator.md, host twins), each running the algorithm and
// element type its name says: two ranks (threads) sum 1.5 and 2.25 to 3.75, or exchange blocks.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/alltoall_kernel_args.h"
#include "collectives/twins/narrow_float.h"

namespace ncclscope::collectives {
namespace {

using HostTwin = void (*)(void**, unsigned, unsigned);

std::vector<unsigned char> Filled(int dtype_index, float v, size_t bytes) {
  std::vector<unsigned char> out(bytes);
  const size_t per = dtype_index == 1 ? 4 : 2;
  for (size_t i = 0; i < bytes / per; ++i) {
    if (dtype_index == 1) {
      std::memcpy(out.data() + i * 4, &v, 4);
    } else {
      const uint16_t h = dtype_index == 2 ? FloatToBf16(v) : FloatToHalf(v);
      std::memcpy(out.data() + i * 2, &h, 2);
    }
  }
  return out;
}

TEST(AccelExports, EveryKernelHasAHostTwinOfItsAlgorithmAndType) {
  void* lib = dlopen(NCCLSCOPE_PROBE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  constexpr size_t kBytes = 4096;
  for (int algorithm = 0; algorithm < 2; ++algorithm) {
    for (int dtype = 0; dtype < 3; ++dtype) {  // kAllReduceKernelNames' order: fp16, fp32, bf16
      const std::string name = kAllReduceKernelNames[algorithm][dtype];
      SCOPED_TRACE(name);
      auto twin = reinterpret_cast<HostTwin>(dlsym(lib, (name + "_host").c_str()));
      const auto* bytes =
          static_cast<const unsigned long*>(dlsym(lib, (name + "_host_param_bytes").c_str()));
      ASSERT_NE(twin, nullptr);
      ASSERT_NE(bytes, nullptr);
      EXPECT_EQ(*bytes, sizeof(AllReduceKernelArgs));
      std::vector<unsigned char> in[2] = {Filled(dtype, 1.5f, kBytes),
                                          Filled(dtype, 2.25f, kBytes)};
      std::vector<unsigned char> out[2] = {std::vector<unsigned char>(kBytes),
                                           std::vector<unsigned char>(kBytes)};
      std::vector<unsigned char> scratch[2] = {std::vector<unsigned char>(kBytes),
                                               std::vector<unsigned char>(kBytes)};
      auto signal = std::make_unique<Signal[]>(2);
      std::memset(signal.get(), 0, 2 * sizeof(Signal));
      KernelStall stall{};
      std::thread ranks[2];
      for (int r = 0; r < 2; ++r) {
        ranks[r] = std::thread([&, r] {
          AllReduceKernelArgs a{};
          for (int q = 0; q < 2; ++q) {
            a.source[q] = in[q].data();
            a.scratch[q] = scratch[q].data();
            a.signal[q] = &signal[q];
          }
          a.input = in[r].data();
          a.output = out[r].data();
          a.stall = &stall;
          a.packs = kBytes / kPackBytes;
          a.timeout_ns = 30'000'000'000;
          a.rank = r;
          a.nranks = 2;
          a.epoch = 1;
          void* params[] = {&a};
          twin(params, 3, 8);
        });
      }
      for (std::thread& t : ranks) t.join();
      EXPECT_EQ(stall.code, 0);
      EXPECT_EQ(out[0], Filled(dtype, 3.75f, kBytes));
      EXPECT_EQ(out[1], Filled(dtype, 3.75f, kBytes));
    }
  }
}

TEST(AccelExports, TheAlltoAllKernelHasAHostTwin) {
  void* lib = dlopen(NCCLSCOPE_PROBE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const std::string name = kAlltoAllKernelName;
  auto twin = reinterpret_cast<HostTwin>(dlsym(lib, (name + "_host").c_str()));
  const auto* bytes =
      static_cast<const unsigned long*>(dlsym(lib, (name + "_host_param_bytes").c_str()));
  ASSERT_NE(twin, nullptr);
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(*bytes, sizeof(AlltoAllKernelArgs));
  // Two ranks, one pack per peer, read in place: rank r receives block r of each rank.
  unsigned char in[2][32], out[2][32] = {};
  for (int r = 0; r < 2; ++r) {
    for (int j = 0; j < 2; ++j)
      std::memset(in[r] + size_t{16} * j, 0x10 * (r + 1) + j, 16);  // block j
  }
  auto signal = std::make_unique<Signal[]>(2);
  std::memset(signal.get(), 0, 2 * sizeof(Signal));
  KernelStall stall{};
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] {
      AlltoAllKernelArgs a{};
      for (int q = 0; q < 2; ++q) {
        a.source[q] = in[q];
        a.signal[q] = &signal[q];
      }
      a.input = in[r];
      a.output = out[r];
      a.stall = &stall;
      a.packs_per_peer = 1;
      a.timeout_ns = 30'000'000'000;
      a.rank = r;
      a.nranks = 2;
      a.epoch = 1;
      void* params[] = {&a};
      twin(params, 2, 4);
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_EQ(stall.code, 0);
  for (int r = 0; r < 2; ++r) {
    for (int q = 0; q < 2; ++q) {
      EXPECT_EQ(out[r][size_t{16} * q], 0x10 * (q + 1) + r) << "rank " << r << " block from " << q;
    }
  }
}

}  // namespace
}  // namespace ncclscope::collectives
