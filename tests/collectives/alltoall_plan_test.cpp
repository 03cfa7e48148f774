// Which ncclAlltoAll calls ncclscope's all-to-all takes and why the others go to NCCL, the
// copy-in decision, the tuning table's all-to-all rows (complete, each with its provenance) and
// the one-line explanation.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <string>

#include "collectives/planner/alltoall_plan.h"
#include "tests/collectives/nccl_codes.h"

namespace ncclscope::collectives {
namespace {

AlltoAllCall EligibleAlltoAll(size_t count, int nranks = 8, int32_t dtype = kNcclBf16) {
  AlltoAllCall c;
  c.nccl_dtype = dtype;
  c.count = count;
  c.nranks = nranks;
  c.single_node = true;
  c.peers_reachable = true;
  c.gpu = GpuClass::kHopper;
  return c;
}

Fallback Why(const AlltoAllCall& c) {
  return PlanAlltoAll(c).fallback;
}

TEST(AlltoAllPlanner, EveryNcclDataTypeIsMovedByItsSizeOnly) {
  // ncclTypeSize for NCCL v2.28.9's ncclDataType_t (src/nccl.h.in), int8 through float8e5m2.
  const size_t want[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int32_t d = 0; d < 12; ++d) {
    EXPECT_EQ(NcclTypeBytes(d), want[d]) << d;
    const AlltoAllPlan p =
        PlanAlltoAll(EligibleAlltoAll(16 / want[d] * 3, 4, d));  // 3 packs per peer
    EXPECT_EQ(p.algorithm, Algorithm::kPull) << d;
    EXPECT_EQ(p.packs_per_peer, 3u) << d;
    EXPECT_EQ(p.bytes, 4u * 3 * 16) << d;
  }
  EXPECT_EQ(Why(EligibleAlltoAll(8, 8, 12)), Fallback::kDtypeUnknown);
  EXPECT_EQ(Why(EligibleAlltoAll(8, 8, -1)), Fallback::kDtypeUnknown);
}

TEST(AlltoAllPlanner, CallsItCannotServeGoToNcclWithTheReason) {
  EXPECT_EQ(Why(EligibleAlltoAll(8, 1)), Fallback::kRanks);
  EXPECT_EQ(Why(EligibleAlltoAll(8, 9)), Fallback::kRanks);
  AlltoAllCall c = EligibleAlltoAll(8);
  c.single_node = false;
  EXPECT_EQ(Why(c), Fallback::kNotOneNode);
  c = EligibleAlltoAll(8);
  c.peers_reachable = false;
  EXPECT_EQ(Why(c), Fallback::kNoPeerAccess);
  c = EligibleAlltoAll(8);
  c.gpu = GpuClass::kUnknown;
  EXPECT_EQ(Why(c), Fallback::kGpu);
  c = EligibleAlltoAll(8);
  c.capturing = true;
  EXPECT_EQ(Why(c), Fallback::kCapture);
  EXPECT_EQ(Why(EligibleAlltoAll(0)), Fallback::kEmpty);
  // 12 bytes per peer: the blocks of the peers would not start on a pack.
  EXPECT_EQ(Why(EligibleAlltoAll(3, 8, kNcclFp32)), Fallback::kAlignment);
  EXPECT_EQ(Why(EligibleAlltoAll(7, 8, kNcclInt8)), Fallback::kAlignment);
  // A byte size that does not fit a size_t must not wrap into an eligible one.
  EXPECT_EQ(Why(EligibleAlltoAll(SIZE_MAX / 4 + 1, 8, kNcclFp64)), Fallback::kAlltoAllTooLarge);
  c = EligibleAlltoAll(1024);  // 8 ranks x 2 KiB = 16 KiB per rank
  c.buffer_bytes = 16 * 1024 - 16;
  EXPECT_EQ(Why(c), Fallback::kBuffer);
  c.buffer_bytes = size_t{16} * 1024;
  EXPECT_EQ(Why(c), Fallback::kNone);
}

TEST(AlltoAllPlanner, TheLimitIsOnARanksWholeSendbuff) {
  // 8 MiB per rank on Hopper, whatever the rank count: 8 ranks x 1 MiB is NCCL's.
  EXPECT_EQ(PlanAlltoAll(EligibleAlltoAll((1u << 20) / 2 - 8)).algorithm, Algorithm::kPull);
  EXPECT_EQ(Why(EligibleAlltoAll((1u << 20) / 2)), Fallback::kAlltoAllTooLarge);
  EXPECT_EQ(PlanAlltoAll(EligibleAlltoAll((4u << 20) / 2 - 8, 2)).algorithm, Algorithm::kPull);
  EXPECT_EQ(Why(EligibleAlltoAll((4u << 20) / 2, 2)), Fallback::kAlltoAllTooLarge);
  EXPECT_STREQ(FallbackText(Fallback::kAlltoAllTooLarge),
               "larger than the tuning table's all-to-all limit");
}

TEST(AlltoAllPlanner, CopyInUnlessRegisteredAndNotInPlace) {
  AlltoAllCall c = EligibleAlltoAll(64);
  EXPECT_TRUE(PlanAlltoAll(c).copy_in);  // unregistered: peers cannot read it
  c.input_registered = true;
  EXPECT_FALSE(PlanAlltoAll(c).copy_in);  // peers read the sendbuff in place
  c.in_place = true;
  EXPECT_TRUE(PlanAlltoAll(c).copy_in);  // each rank overwrites blocks its peers still read
}

TEST(AlltoAllPlanner, EveryGpuAndRankCountHasOneRowWithProvenance) {
  size_t n = 0;
  const AlltoAllTuningRow* rows = AlltoAllTuningRows(&n);
  ASSERT_EQ(n, std::size(kGpusWithKernels));
  for (GpuClass g : kGpusWithKernels) {
    for (int ranks = 2; ranks <= kMaxRanks; ++ranks) {
      int found = 0;
      for (size_t i = 0; i < n; ++i) {
        found += rows[i].gpu == g && ranks >= rows[i].min_ranks && ranks <= rows[i].max_ranks;
      }
      EXPECT_EQ(found, 1) << GpuClassName(g) << " " << ranks;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NE(std::strstr(rows[i].provenance, "not measured"), nullptr) << rows[i].provenance;
    EXPECT_GT(rows[i].max_bytes, 0u);
    EXPECT_GT(rows[i].blocks * rows[i].threads, 0u);
  }
}

TEST(AlltoAllPlanner, ExplainSaysWhatRunsAndWhy) {
  char line[256];
  AlltoAllCall c = EligibleAlltoAll(2048, 8, kNcclFp16);
  ExplainAlltoAllPlan(PlanAlltoAll(c), c, line, sizeof(line));
  EXPECT_STREQ(line,
               "pull (8 ranks x 4096 bytes, 2-byte elements, 36x512, copy-in; table row sm_90 2-8 "
               "ranks)");
  c = EligibleAlltoAll(0);
  ExplainAlltoAllPlan(PlanAlltoAll(c), c, line, sizeof(line));
  EXPECT_STREQ(line, "nccl: count 0");
}

}  // namespace
}  // namespace ncclscope::collectives
