// The one CUDA driver table (cuda/driver.h): which functions a library provides, which part can
// run on it, and that the process's table is loaded once however many threads ask for it.
#include "cuda/driver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cuda/gpu_uuid.h"

namespace ncclscope::cuda {
namespace {

TEST(CudaDriver, AMissingLibraryIsNamedWithTheLoadersReason) {
  Driver d;
  std::string error;
  EXPECT_FALSE(OpenDriver("/nonexistent/libcuda.so.1", &d, &error));
  EXPECT_NE(error.find("cannot load /nonexistent/libcuda.so.1: "), std::string::npos) << error;
  EXPECT_EQ(SharedDriver("/nonexistent/libcuda.so.1", &error), nullptr);
  EXPECT_FALSE(LoadDriverFor(kUseCompletion, "/nonexistent/libcuda.so.1", &d, &error));
}

// The plugin tests' fake has the completion tracker's functions and nothing else: the tracker can
// run on it, the other parts are refused with the first function they lack.
TEST(CudaDriver, EachPartIsRefusedWithTheFirstFunctionItNeedsThatTheDriverLacks) {
  Driver d;
  std::string error;
  ASSERT_TRUE(OpenDriver(FAKE_CUDA_LIBRARY, &d, &error)) << error;
  EXPECT_NE(d.event_record, nullptr);
  EXPECT_NE(d.event_destroy, nullptr);  // found by its versioned name, cuEventDestroy_v2
  EXPECT_EQ(d.mem_alloc, nullptr);
  EXPECT_TRUE(Supports(d, kUseCompletion, &error)) << error;
  EXPECT_FALSE(Supports(d, kUseAccel, &error));
  EXPECT_EQ(error, "symbol cuDeviceGetAttribute missing from the CUDA driver");
  EXPECT_FALSE(Supports(d, kUseGpuCheck, &error));
  EXPECT_EQ(error, "symbol cuDriverGetVersion missing from the CUDA driver");
  EXPECT_FALSE(Supports(d, kUseCompletion | kUseNumerics, &error));
  EXPECT_EQ(error, "symbol cuDeviceGetAttribute missing from the CUDA driver");

  Driver loaded;
  EXPECT_TRUE(LoadDriverFor(kUseCompletion, FAKE_CUDA_LIBRARY, &loaded, &error)) << error;
  EXPECT_EQ(loaded.event_record, d.event_record);
  Driver untouched;
  EXPECT_FALSE(LoadDriverFor(kUseNumerics, FAKE_CUDA_LIBRARY, &untouched, &error));
  EXPECT_EQ(untouched.event_record, nullptr);
}

// Jobs and CI run every part on the emulator's libcuda.so.1 (docs/emulator.md): it must offer
// what each of them needs.
TEST(CudaDriver, TheEmulatedDriverServesEveryPart) {
  Driver d;
  std::string error;
  ASSERT_TRUE(OpenDriver(EMULATED_CUDA_LIBRARY, &d, &error)) << error;
  EXPECT_TRUE(Supports(d, kUseCompletion | kUseNumerics | kUseAccel | kUseGpuCheck, &error))
      << error;
}

TEST(CudaDriver, TheProcessTableIsLoadedOnceForAllThreads) {
  constexpr int kThreads = 8;
  std::vector<const Driver*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      std::string error;
      seen[i] = SharedDriver(FAKE_CUDA_LIBRARY, &error);
    });
  }
  go.store(true);
  for (std::thread& t : threads) t.join();
  ASSERT_NE(seen[0], nullptr);
  for (const Driver* d : seen) EXPECT_EQ(d, seen[0]);
  std::string error;
  EXPECT_EQ(SharedDriver(FAKE_CUDA_LIBRARY, &error), seen[0]);
}

TEST(CudaDriver, ErrorTextFallsBackToTheNumberWithoutTheDriversText) {
  Driver d;
  EXPECT_EQ(ErrorText(d, CUDA_ERROR_OUT_OF_MEMORY), "CUresult 2");
  d.get_error_string = [](CUresult, const char** text) {
    *text = "out of memory";
    return CUDA_SUCCESS;
  };
  EXPECT_EQ(ErrorText(d, CUDA_ERROR_OUT_OF_MEMORY), "out of memory (2)");
}

TEST(CudaDriver, GpuUuidIsPrintedAsNvidiaSmiDoesAndEmptyWhenUnknown) {
  CUuuid uuid{};
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(0xa0 + i);
  EXPECT_EQ(FormatGpuUuid(uuid), "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  Driver d;
  EXPECT_EQ(GpuUuidOf(d, 0), "");
}

}  // namespace
}  // namespace ncclscope::cuda
