// The CUPTI probe's arithmetic (plugin/cupti/cupti_timeline.h) and its decoding of CUPTI's records
// (plugin/cupti/cupti_decode.h), on hand-made kernels and records.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "plugin/cupti/cupti_correlate.h"
#include "plugin/cupti/cupti_decode.h"
#include "plugin/cupti/cupti_timeline.h"

namespace ncclscope::plugin {
namespace {

constexpr uint64_t kMs = 1'000'000;

KernelActivity Kernel(uint64_t start_ms, uint64_t end_ms, bool nccl, uint32_t correlation = 0,
                      uint32_t device = 0) {
  KernelActivity k;
  k.start = start_ms * kMs;
  k.end = end_ms * kMs;
  k.nccl = nccl;
  k.correlation = correlation;
  k.device = device;
  return k;
}

TEST(CuptiKernelName, NcclKernelsAreToldApartMangledOrNot) {
  // NCCL 2.19+ names its kernels ncclDevKernel_<func>_<op>_<type>_<algo>_<proto>, older ones
  // ncclKernel_...; CUPTI reports the mangled name unless asked to demangle.
  EXPECT_TRUE(IsNcclKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(IsNcclKernelName("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgs"));
  EXPECT_TRUE(IsNcclKernelName("ncclDevKernel_Generic"));
  EXPECT_TRUE(IsNcclKernelName("_Z28ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_tP11ncclDevComm"));
  EXPECT_FALSE(IsNcclKernelName("_Z10gemm_kernelPfS_S_"));
  EXPECT_FALSE(IsNcclKernelName("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(IsNcclKernelName("my_ncclDevKernel_lookalike"));
  EXPECT_FALSE(IsNcclKernelName(""));
  EXPECT_FALSE(IsNcclKernelName(nullptr));
}

TEST(CuptiTimeline, ComputeBetweenTwoCollectivesIsTheUnionOfItsKernels) {
  DeviceTimeline t;
  std::vector<NcclKernelSpan> spans;
  // NCCL 0-1 ms; compute 2-5 and 4-7 (overlapping streams: 5 ms of union, not 6), 8-9; NCCL 10.
  t.Add({Kernel(0, 1, true, 1), Kernel(2, 5, false), Kernel(4, 7, false), Kernel(8, 9, false),
         Kernel(10, 12, true, 2)},
        &spans);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].prev_end, 0u);  // the first: what came before is unknown
  EXPECT_EQ(spans[1].kernel.correlation, 2u);
  EXPECT_EQ(spans[1].prev_end, 1 * kMs);
  EXPECT_EQ(spans[1].compute_ns, 6 * kMs);
  EXPECT_EQ(spans[1].compute_kernels, 3u);
}

TEST(CuptiTimeline, CollectivesLaunchedTogetherAfterComputeBothSeeIt) {
  // Two communicators on two streams after one compute phase: the one that ends later (a peer
  // was late) still has the compute before it, not zero.
  DeviceTimeline t;
  std::vector<NcclKernelSpan> spans;
  t.Add({Kernel(0, 1, true, 1), Kernel(2, 42, false), Kernel(43, 44, true, 2),
         Kernel(42, 90, true, 3)},
        &spans);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[1].kernel.correlation, 2u);
  EXPECT_EQ(spans[1].compute_ns, 40 * kMs);
  EXPECT_EQ(spans[2].kernel.correlation, 3u);
  EXPECT_EQ(spans[2].compute_ns, 40 * kMs);
}

TEST(CuptiTimeline, BatchesAndDevicesAreKeptApart) {
  DeviceTimeline t;
  std::vector<NcclKernelSpan> spans;
  t.Add({Kernel(0, 1, true, 1, 0), Kernel(0, 1, true, 2, 1), Kernel(2, 4, false, 0, 0)}, &spans);
  t.Add({Kernel(5, 20, false, 0, 1), Kernel(21, 22, true, 3, 1), Kernel(6, 7, true, 4, 0)}, &spans);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[2].kernel.correlation, 4u);  // ends first
  EXPECT_EQ(spans[2].compute_ns, 2 * kMs);
  EXPECT_EQ(spans[3].kernel.correlation, 3u);
  EXPECT_EQ(spans[3].compute_ns, 15 * kMs);
}

TEST(CuptiTimeline, LostActivityMakesTheNextStretchUnknown) {
  DeviceTimeline t;
  std::vector<NcclKernelSpan> spans;
  t.Add({Kernel(0, 1, true, 1), Kernel(2, 3, false)}, &spans);
  t.Lose();
  t.Add({Kernel(4, 5, true, 2), Kernel(6, 7, false), Kernel(8, 9, true, 3)}, &spans);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[1].prev_end, 0u);  // unknown, never "no compute"
  EXPECT_EQ(spans[2].prev_end, 5 * kMs);
  EXPECT_EQ(spans[2].compute_ns, 1 * kMs);
}

TEST(CuptiTimeline, UnionWithinClipsToTheStretch) {
  EXPECT_EQ(UnionWithin({{0, 10}, {5, 20}, {30, 40}}, 8, 35),
            (std::pair<uint64_t, uint32_t>{17, 3}));
  EXPECT_EQ(UnionWithin({{0, 10}}, 10, 20), (std::pair<uint64_t, uint32_t>{0, 0}));
  EXPECT_EQ(UnionWithin({{0, 10}}, 5, 5), (std::pair<uint64_t, uint32_t>{0, 0}));
}

TEST(CuptiDecode, KernelAndExternalCorrelationRecords) {
  DecodedActivity out;
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 100;
  k.end = 250;
  k.correlationId = 7;
  k.deviceId = 3;
  k.streamId = 13;
  k.name = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgs";
  DecodeActivity(reinterpret_cast<CUpti_Activity*>(&k), CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2,
                 &out);
  CUpti_ActivityKernel10 incomplete = k;
  incomplete.end = 0;  // a forced flush hands out records of kernels still running
  DecodeActivity(reinterpret_cast<CUpti_Activity*>(&incomplete),
                 CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &out);
  CUpti_ActivityExternalCorrelation mine{}, kineto{};
  mine.kind = kineto.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  mine.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  kineto.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;  // another tool's id: not ours
  mine.externalId = kineto.externalId = 0xABCDEF;
  mine.correlationId = kineto.correlationId = 7;
  DecodeActivity(reinterpret_cast<CUpti_Activity*>(&mine), CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2,
                 &out);
  DecodeActivity(reinterpret_cast<CUpti_Activity*>(&kineto),
                 CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].start, 100u);
  EXPECT_EQ(out.kernels[0].end, 250u);
  EXPECT_EQ(out.kernels[0].correlation, 7u);
  EXPECT_EQ(out.kernels[0].device, 3u);
  EXPECT_EQ(out.kernels[0].stream, 13u);
  EXPECT_TRUE(out.kernels[0].nccl);
  ASSERT_EQ(out.correlations.size(), 1u);
  EXPECT_EQ(out.correlations[0], (std::pair<uint32_t, uint64_t>{7, 0xABCDEF}));
}

TEST(CuptiKey, RecordsOfDifferentThreadsOrTimesGetDifferentKeys) {
  const uint64_t a = CuptiKey(1234, 5'000'000'123);
  EXPECT_EQ(a, CuptiKey(1234, 5'000'000'123));
  EXPECT_NE(a, CuptiKey(1235, 5'000'000'123));
  EXPECT_NE(a, CuptiKey(1234, 5'000'000'124));
  // Linux thread ids reach 2^22 - 1 (pid_max): all of them fit.
  EXPECT_NE(CuptiKey((1u << 22) - 1, 7), CuptiKey((1u << 22) - 2, 7));
}

}  // namespace
}  // namespace ncclscope::plugin
