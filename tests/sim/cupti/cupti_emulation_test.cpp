// The emulated CUPTI (sim/cupti) follows what cupti_activity.h documents for the calls the probe
// makes: an external correlation record only for a launch made while the thread has an id pushed
// and both EXTERNAL_CORRELATION and an API kind (DRIVER) are enabled (cuptiActivityPushExternal-
// CorrelationId's documentation); a kernel record once the kernel has ended; records walked with
// cuptiActivityGetNextRecord until CUPTI_ERROR_MAX_LIMIT_REACHED; records without a buffer
// dropped and counted once (cuptiActivityGetNumDroppedRecords).
#include <cupti.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/emulator/kernel_activity.h"

namespace {

struct Delivered {
  std::vector<CUpti_ActivityExternalCorrelation> correlations;
  std::vector<CUpti_ActivityKernel10> kernels;
  std::vector<std::string> names;
};
Delivered g_delivered;
bool g_give_buffers = true;

void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = g_give_buffers ? static_cast<uint8_t*>(std::aligned_alloc(8, 4096)) : nullptr;
  *size = *buffer != nullptr ? 4096 : 0;
  *max_records = 0;
}

void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
      g_delivered.kernels.push_back(*k);
      g_delivered.names.emplace_back(k->name);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      g_delivered.correlations.push_back(*reinterpret_cast<CUpti_ActivityExternalCorrelation*>(r));
    }
  }
  std::free(buffer);
}

class EmulatedCupti : public ::testing::Test {
 protected:
  void SetUp() override {
    g_delivered = {};
    g_give_buffers = true;
    ASSERT_EQ(cuptiActivityRegisterCallbacks(Requested, Completed), CUPTI_SUCCESS);
    ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
    ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), CUPTI_SUCCESS);
  }
  void TearDown() override {
    cuptiActivityFlushAll(0);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  }
};

TEST_F(EmulatedCupti, ExternalCorrelationNeedsAPushedIdAndDriverActivity) {
  const auto kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  ASSERT_EQ(cuptiActivityPushExternalCorrelationId(kind, 42), CUPTI_SUCCESS);
  ncclsimKernelLaunch();  // DRIVER off: CUPTI creates no API record to correlate
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
  const uint32_t launched = ncclsimKernelLaunch();
  uint64_t last = 0;
  ASSERT_EQ(cuptiActivityPopExternalCorrelationId(kind, &last), CUPTI_SUCCESS);
  EXPECT_EQ(last, 42u);
  ncclsimKernelLaunch();  // nothing pushed any more
  EXPECT_EQ(cuptiActivityPopExternalCorrelationId(kind, nullptr), CUPTI_ERROR_QUEUE_EMPTY);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  ASSERT_EQ(g_delivered.correlations.size(), 1u);
  EXPECT_EQ(g_delivered.correlations[0].externalKind, kind);
  EXPECT_EQ(g_delivered.correlations[0].externalId, 42u);
  EXPECT_EQ(g_delivered.correlations[0].correlationId, launched);
  EXPECT_TRUE(g_delivered.kernels.empty());  // launched, never ended: no kernel record
}

TEST_F(EmulatedCupti, KernelRecordWhenItEndsOnTheGpuClock) {
  const uint32_t id = ncclsimKernelLaunch();
  const uint64_t start = ncclsimGpuClockNs();
  ncclsimKernelRan("ncclDevKernel_Generic", id, 3, nullptr, start, start + 1000);
  ncclsimRunComputeKernel("sim_compute_step", 5);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  ASSERT_EQ(g_delivered.kernels.size(), 2u);
  const CUpti_ActivityKernel10& nccl = g_delivered.kernels[0];
  EXPECT_EQ(g_delivered.names[0], "ncclDevKernel_Generic");
  EXPECT_EQ(nccl.correlationId, id);
  EXPECT_EQ(nccl.deviceId, 3u);
  EXPECT_EQ(nccl.end - nccl.start, 1000u);
  EXPECT_GE(nccl.start, uint64_t{1} << 50);  // not the host's monotonic clock
  const CUpti_ActivityKernel10& compute = g_delivered.kernels[1];
  EXPECT_EQ(g_delivered.names[1], "sim_compute_step");
  EXPECT_GE(compute.end - compute.start, 5'000'000u);
  EXPECT_GE(compute.start, nccl.end);
}

TEST_F(EmulatedCupti, FullBuffersAreHandedBackAndRecordsWithoutOneAreCountedOnce) {
  for (int i = 0; i < 100; ++i) {  // 100 kernel records do not fit one 4 KiB buffer
    const uint32_t id = ncclsimKernelLaunch();
    ncclsimKernelRan("k", id, 0, nullptr, 10, 20);
  }
  EXPECT_GT(g_delivered.kernels.size(), 0u);  // before any flush
  cuptiActivityFlushAll(0);
  EXPECT_EQ(g_delivered.kernels.size(), 100u);
  g_give_buffers = false;
  ncclsimKernelRan("k", ncclsimKernelLaunch(), 0, nullptr, 10, 20);
  ncclsimKernelRan("k", ncclsimKernelLaunch(), 0, nullptr, 10, 20);
  size_t dropped = 0;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 2u);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
}

}  // namespace
