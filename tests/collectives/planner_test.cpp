// Which calls ncclscope's AllReduce takes and why the others go to NCCL, and the tuning table's
// rows: complete, ordered, each with its provenance.
#include <gtest/gtest.h>

#include <string>

#include "collectives/planner/epoch.h"
#include "collectives/planner/planner.h"
#include "tests/collectives/nccl_codes.h"

namespace ncclscope::collectives {
namespace {

AllReduceCall EligibleAllReduce(size_t count, int nranks = 8) {
  AllReduceCall c;
  c.nccl_dtype = kNcclBf16;
  c.nccl_redop = kNcclSum;
  c.count = count;
  c.nranks = nranks;
  c.single_node = true;
  c.peers_reachable = true;
  c.gpu = GpuClass::kHopper;
  return c;
}

std::string Explain(const AllReduceCall& c) {
  char line[256];
  ExplainPlan(PlanAllReduce(c), c, line, sizeof(line));
  return line;
}

TEST(AllReducePlanner, SmallIsOneShotMediumTwoShotLargeNccl) {
  // 8 ranks on Hopper: one-shot below 256 KiB, two-shot below 64 MiB.
  EXPECT_EQ(PlanAllReduce(EligibleAllReduce(size_t{16} * 1024)).algorithm,
            Algorithm::kOneShot);  // 32 KiB of bf16
  EXPECT_EQ(PlanAllReduce(EligibleAllReduce(size_t{128} * 1024 - 8)).algorithm,
            Algorithm::kOneShot);
  EXPECT_EQ(PlanAllReduce(EligibleAllReduce(size_t{128} * 1024)).algorithm,
            Algorithm::kTwoShot);                                                        // 256 KiB
  EXPECT_EQ(PlanAllReduce(EligibleAllReduce(8u << 20)).algorithm, Algorithm::kTwoShot);  // 16 MiB
  const AllReducePlan big = PlanAllReduce(EligibleAllReduce(32u << 20));                 // 64 MiB
  EXPECT_EQ(big.algorithm, Algorithm::kNccl);
  EXPECT_EQ(big.fallback, Fallback::kTooLarge);
  // Two ranks: one-shot all the way.
  EXPECT_EQ(PlanAllReduce(EligibleAllReduce(8u << 20, 2)).algorithm, Algorithm::kOneShot);
}

TEST(AllReducePlanner, EachIneligibleCallSaysWhy) {
  auto why = [](AllReduceCall c) { return PlanAllReduce(c).fallback; };
  AllReduceCall c = EligibleAllReduce(1024);
  c.nccl_dtype = kNcclInt32;
  EXPECT_EQ(why(c), Fallback::kDtype);
  c = EligibleAllReduce(1024);
  c.nccl_redop = kNcclMax;
  EXPECT_EQ(why(c), Fallback::kRedop);
  EXPECT_EQ(why(EligibleAllReduce(1024, 1)), Fallback::kRanks);
  EXPECT_EQ(why(EligibleAllReduce(1024, 9)), Fallback::kRanks);
  c = EligibleAllReduce(1024);
  c.single_node = false;
  EXPECT_EQ(why(c), Fallback::kNotOneNode);
  c = EligibleAllReduce(1024);
  c.peers_reachable = false;
  EXPECT_EQ(why(c), Fallback::kNoPeerAccess);
  c = EligibleAllReduce(1024);
  c.gpu = GpuClass::kUnknown;
  EXPECT_EQ(why(c), Fallback::kGpu);
  c = EligibleAllReduce(1024);
  c.capturing = true;
  EXPECT_EQ(why(c), Fallback::kCapture);
  EXPECT_EQ(why(EligibleAllReduce(0)), Fallback::kEmpty);
  EXPECT_EQ(why(EligibleAllReduce(1001)), Fallback::kAlignment);  // 2002 bytes
  c = EligibleAllReduce(1u << 20);                                // 2 MiB
  c.buffer_bytes = 1u << 20;
  EXPECT_EQ(why(c), Fallback::kBuffer);
  c.buffer_bytes = 2u << 20;
  EXPECT_EQ(why(c), Fallback::kNone);
  c = EligibleAllReduce(1024);
  c.nccl_dtype = kNcclFp32;
  c.count = size_t{1001} * 4;  // 16016 bytes: whole packs
  EXPECT_EQ(why(c), Fallback::kNone);
  EXPECT_EQ(Explain(EligibleAllReduce(1024, 1)), "nccl: communicator of 1 rank or more than 8");
}

TEST(AllReducePlanner, CopyInUnlessTheInputIsRegisteredAndSafeToReadInPlace) {
  AllReduceCall c = EligibleAllReduce(1024);
  EXPECT_TRUE(PlanAllReduce(c).copy_in);  // not registered
  c.input_registered = true;
  EXPECT_FALSE(PlanAllReduce(c).copy_in);
  c.in_place = true;  // one-shot: peers would read what this rank overwrites
  EXPECT_TRUE(PlanAllReduce(c).copy_in);
  c.count = 1u << 20;  // two-shot: every read ends at the middle barrier, before any write
  EXPECT_EQ(PlanAllReduce(c).algorithm, Algorithm::kTwoShot);
  EXPECT_FALSE(PlanAllReduce(c).copy_in);
}

// Blackwell's rows take vLLM's sm_100 caps (2 MiB at 2-4 ranks, 1 MiB at 5-8): a 1 MiB bf16 call
// on 8 ranks is two-shot on an H100 and goes to NCCL on a B200; 512 KiB is two-shot on both.
TEST(AllReducePlanner, BlackwellStopsWhereVllmsSm100CapsDo) {
  EXPECT_EQ(GpuClassOf(10), GpuClass::kBlackwell);
  EXPECT_EQ(GpuClassOf(12), GpuClass::kUnknown);  // sm_120: no NVLink between cards, no kernels
  AllReduceCall c = EligibleAllReduce(1u << 19);  // 1 MiB
  c.gpu = GpuClass::kBlackwell;
  EXPECT_EQ(PlanAllReduce(c).fallback, Fallback::kTooLarge);
  c.count = 1u << 18;  // 512 KiB
  EXPECT_EQ(PlanAllReduce(c).algorithm, Algorithm::kTwoShot);
  c.count = (1u << 17) - 8;  // just under 256 KiB: one-shot
  EXPECT_EQ(PlanAllReduce(c).algorithm, Algorithm::kOneShot);
  c = EligibleAllReduce(1u << 20, 2);  // 2 MiB on 2 ranks: at the cap, to NCCL; one-shot below it
  c.gpu = GpuClass::kBlackwell;
  EXPECT_EQ(PlanAllReduce(c).fallback, Fallback::kTooLarge);
  c.count -= 8;
  EXPECT_EQ(PlanAllReduce(c).algorithm, Algorithm::kOneShot);
  EXPECT_EQ(Explain(c),
            "one-shot (bf16, 2097136 bytes, 2 ranks, 36x512, copy-in; table row sm_100 2-2 ranks)");
}

TEST(AllReducePlanner, ExplanationNamesAlgorithmShapeAndTableRow) {
  EXPECT_EQ(Explain(EligibleAllReduce(1u << 20)),
            "two-shot (bf16, 2097152 bytes, 8 ranks, 36x512, copy-in; table row sm_90 5-8 ranks)");
}

TEST(TuningTable, RowsCoverTwoToEightRanksPerGpuWithProvenance) {
  size_t n = 0;
  const TuningRow* rows = TuningRows(&n);
  ASSERT_GT(n, 0u);
  for (GpuClass g : kGpusWithKernels) {
    for (int ranks = 2; ranks <= kMaxRanks; ++ranks) {
      const TuningRow* r = FindTuning(g, ranks);
      ASSERT_NE(r, nullptr) << GpuClassName(g) << " " << ranks;
    }
    EXPECT_EQ(FindTuning(g, 1), nullptr);
    EXPECT_EQ(FindTuning(g, 9), nullptr);
  }
  EXPECT_EQ(FindTuning(GpuClass::kUnknown, 8), nullptr);
  for (size_t i = 0; i < n; ++i) {
    const TuningRow& r = rows[i];
    SCOPED_TRACE(r.provenance);
    EXPECT_LE(r.one_shot_max_bytes, r.two_shot_max_bytes);
    EXPECT_EQ(r.one_shot_max_bytes % kPackBytes, 0u);
    EXPECT_GE(r.blocks, 1u);
    EXPECT_LE(r.blocks, kMaxBlocks);
    EXPECT_GE(r.threads, 32u);
    EXPECT_NE(std::string(r.provenance).find("not measured"), std::string::npos);
  }
}

}  // namespace
}  // namespace ncclscope::collectives
