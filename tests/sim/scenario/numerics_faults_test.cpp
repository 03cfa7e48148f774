// The numerics faults (nan_input, flip_output): their syntax, the errors of bad ones, and how one
// rank plays them (which collectives a flip hits, where a NaN goes, what the check expects).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"
#include "sim/scenario/numerics_faults.h"
#include "sim/scenario/rank_faults.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

using testing::parse;
using testing::parseError;
using testing::withFaults;

TEST(NumericsFaults, NanInputDefaultsAndOptions) {
  const Scenario s = parse(withFaults(R"([
      {"kind": "nan_input", "ranks": [1], "step": 1, "op": 0},
      {"kind": "nan_input", "ranks": [2], "step": 0, "op": 1, "value": "-inf", "index": 7,
       "spread": false},
      {"kind": "nan_input", "ranks": [3], "step": 0, "op": 0, "value": "inf"}])"));
  ASSERT_EQ(s.faults.size(), 3u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::kNanInput);
  EXPECT_TRUE(std::isnan(s.faults[0].nan_value));
  EXPECT_EQ(s.faults[0].index, 0u);
  EXPECT_TRUE(s.faults[0].spread);
  EXPECT_EQ(s.faults[1].nan_value, -INFINITY);
  EXPECT_EQ(s.faults[1].index, 7u);
  EXPECT_FALSE(s.faults[1].spread);
  EXPECT_EQ(s.faults[2].nan_value, INFINITY);
  EXPECT_EQ(describeFault(s.faults[0]), "nan_input at step 1 op 0");
}

TEST(NumericsFaults, FlipOutputDefaultsAndOptions) {
  const Scenario s = parse(withFaults(R"([
      {"kind": "flip_output", "ranks": [1], "step": 1, "op": 0},
      {"kind": "flip_output", "ranks": [-1], "step": 0, "op": 1, "bit": 255, "every": 3}])"));
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::kFlipOutput);
  EXPECT_EQ(s.faults[0].bit, 0u);
  EXPECT_EQ(s.faults[0].every, 0);
  EXPECT_EQ(s.faults[1].bit, 255u);  // 8 x float32: the last bit
  EXPECT_EQ(s.faults[1].every, 3);
}

struct BadFaults {
  const char* faults;
  const char* want;
};

class NumericsFaultErrors : public ::testing::TestWithParam<BadFaults> {};

TEST_P(NumericsFaultErrors, NameFileFaultAndProblem) {
  // Op 3 of this scenario is an int32 allreduce.
  const std::string json =
      R"({"steps": [{"ops": [{"op": "allreduce", "count": 8},
                             {"op": "broadcast", "count": 8, "root": 0},
                             {"op": "pipeline", "count": 8},
                             {"op": "allreduce", "count": 8, "dtype": "int32"}]}],
          "faults": )" +
      std::string(GetParam().faults) + "}";
  const std::string err = parseError(json);
  EXPECT_NE(err.find(GetParam().want), std::string::npos) << "got: " << err;
  EXPECT_EQ(err.rfind("test.json: ", 0), 0u) << err;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, NumericsFaultErrors,
    ::testing::Values(
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 3}])",
                  "faults[0].op: nan_input needs a floating-point dtype, this allreduce is "
                  "ncclInt32 (no NaN or Inf)"},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 0, "value": "NaN!"}])",
                  "faults[0].value: unknown value 'NaN!' (expected one of: nan, inf, -inf)"},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 0, "value": 1}])",
                  "faults[0].value: "},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 0, "index": 8}])",
                  "faults[0].index: the op's input has 8 elements"},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 0, "index": -1}])",
                  "faults[0].index: "},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 0, "spread": "yes"}])",
                  "faults[0].spread: "},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0}])",
                  "faults[0].op: required key is missing"},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 2}])",
                  "faults[0].op: nan_input applies to collectives, pipeline is sends and receives"},
        BadFaults{R"([{"kind": "nan_input", "ranks": [0], "step": 0, "op": 0, "bit": 1}])",
                  "faults[0].bit: unknown key for a nan_input fault (allowed: kind, ranks, step, "
                  "op, value, index, spread)"},
        BadFaults{R"([{"kind": "flip_output", "ranks": [0], "step": 0, "op": 0, "bit": 256}])",
                  "faults[0].bit: the op's output holds 256 bits (8 x ncclFloat32)"},
        BadFaults{R"([{"kind": "flip_output", "ranks": [0], "step": 0, "op": 0, "bit": -3}])",
                  "faults[0].bit: "},
        BadFaults{R"([{"kind": "flip_output", "ranks": [0], "step": 0, "op": 0, "every": 0}])",
                  "faults[0].every: 0 is out of range"},
        BadFaults{R"([{"kind": "flip_output", "ranks": [0], "step": 0, "op": 2}])",
                  "faults[0].op: flip_output applies to collectives, pipeline is sends and "
                  "receives"},
        BadFaults{R"([{"kind": "flip_output", "ranks": [0], "step": 1, "op": 0}])",
                  "faults[0].step: step 1 does not exist"},
        BadFaults{R"([{"kind": "flip_output", "ranks": [0], "step": 0, "op": 0, "value": "nan"}])",
                  "faults[0].value: unknown key for a flip_output fault (allowed: kind, ranks, "
                  "step, op, bit, every)"}));

// Numerics faults change data, not calls: the rest of the group stays checked (unlike skip or
// wrong_count, after which a group's data is undefined).
TEST(NumericsFaults, DoNotDesyncTheGroup) {
  const Scenario s = parse(withFaults(R"([
      {"kind": "nan_input", "ranks": [1], "step": 0, "op": 0},
      {"kind": "flip_output", "ranks": [1], "step": 0, "op": 1, "every": 1}])"));
  const JobLayout job(s, 4);
  for (int w = 0; w < 4; ++w) {
    EXPECT_FALSE(groupDesynced(s, job, job.indexOf("tp"), w, 1, 0)) << w;
    EXPECT_FALSE(groupDesynced(s, job, job.indexOf("world"), w, 1, 1)) << w;
  }
}

TEST(NumericsFaults, NanReachesItsOwnOpAndWithSpreadEveryLaterOne) {
  const Scenario s = parse(withFaults(R"([
      {"kind": "nan_input", "ranks": [1], "step": 0, "op": 1, "spread": false},
      {"kind": "nan_input", "ranks": [2], "step": 1, "op": 0}])"));
  EXPECT_FALSE(nanInputReaches(s, 0, 0));
  EXPECT_TRUE(nanInputReaches(s, 0, 1));   // the fault's own op, on every rank
  EXPECT_FALSE(nanInputReaches(s, 0, 2));  // spread false: nothing after it
  EXPECT_TRUE(nanInputReaches(s, 1, 0));
  EXPECT_TRUE(nanInputReaches(s, 1, 2));  // spread: everything after it
  EXPECT_FALSE(nanSpreadsAt(s, 0, 2));
  EXPECT_TRUE(nanSpreadsAt(s, 1, 0));
}

// Rank 3 of 4 runs op 0 and op 1 (collectives) and op 2 (a pipeline) in 2 repetitions.
TEST(NumericsFaults, FlipHitsItsOpOnceOrEveryKthCollectiveOfTheRank) {
  const Scenario s = parse(withFaults(R"([
      {"kind": "flip_output", "ranks": [3], "step": 0, "op": 1, "bit": 5},
      {"kind": "flip_output", "ranks": [-1], "step": 0, "op": 0, "bit": 9, "every": 2}])"));
  OutputFlips flips(s, 3, 4);
  // Collectives in issue order: (0,0) (0,1) (1,0) (1,1).
  EXPECT_EQ(flips.next(0, 0), std::optional<uint64_t>(9));
  EXPECT_EQ(flips.next(0, 1), std::optional<uint64_t>(5));  // the once-fault's op
  EXPECT_EQ(flips.next(1, 0), std::optional<uint64_t>(9));  // 2nd collective after (0,0)
  EXPECT_EQ(flips.next(1, 1), std::nullopt);
  OutputFlips other(s, 2, 4);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(other.next(k / 2, k % 2), std::nullopt) << k;
}

OpCall call(OpKind kind, ncclDataType_t dtype, size_t count, int root = 0) {
  OpCall c;
  c.kind = kind;
  c.dtype = dtype;
  c.count = count;
  c.root = root;
  return c;
}

TEST(NumericsFaults, NanGoesIntoTheInputAndIsSeenInTheOutput) {
  const PatternKey key{1, 0, 0, 0};
  for (ncclDataType_t dt : {ncclFloat32, ncclBfloat16, ncclFloat16, ncclFloat8e5m2}) {
    const OpCall c = call(OpKind::kAllReduce, dt, 8);
    OpBuffers b = prepareBuffers(c, key, 1, 4);
    ASSERT_TRUE(writeInput(c, b, 3, NAN)) << dt;
    EXPECT_TRUE(std::isnan(decodeValue(&b.send[3 * dtypeSize(dt)], dt))) << dt;
    EXPECT_FALSE(std::isnan(decodeValue(&b.send[2 * dtypeSize(dt)], dt))) << dt;
    b.recv = b.send;  // as if the op ran
    EXPECT_TRUE(outputHasNonFinite(c, 1, b)) << dt;
    EXPECT_FALSE(writeInput(c, b, 8, NAN)) << "no element 8";
  }
  const OpCall ints = call(OpKind::kAllReduce, ncclInt32, 8);
  OpBuffers b = prepareBuffers(ints, key, 1, 4);
  EXPECT_FALSE(writeInput(ints, b, 0, NAN));
}

TEST(NumericsFaults, OnlyDefinedOutputsCountAsPoisoned) {
  // A receive buffer starts as 0xff bytes: NaN in float32, but a Reduce off the root never
  // writes it, so that is no NaN of the job's.
  const PatternKey key{1, 0, 0, 0};
  const OpCall reduce = call(OpKind::kReduce, ncclFloat32, 8, 0);
  const OpBuffers off_root = prepareBuffers(reduce, key, 1, 4);
  EXPECT_FALSE(outputHasNonFinite(reduce, 1, off_root));
  EXPECT_EQ(outputBits(reduce, 1, off_root), 0u);
  EXPECT_TRUE(outputHasNonFinite(reduce, 0, prepareBuffers(reduce, key, 0, 4)));
  const OpCall gather = call(OpKind::kAllGather, ncclBfloat16, 8);
  EXPECT_EQ(outputBits(gather, 2, prepareBuffers(gather, key, 2, 4)), 4u * 8 * 16);
}

TEST(NumericsFaults, CheckCountsNonFiniteElementsOnlyWhenAsked) {
  const PatternKey key{1, 0, 0, 0};
  const OpCall c = call(OpKind::kAllGather, ncclFloat32, 4);
  OpBuffers b = prepareBuffers(c, key, 0, 2);
  for (size_t i = 0; i < 8; ++i) {
    encodeValue(inputValue(key, PatternShape{c.kind, c.redop, c.dtype, 1.0, 2},
                           static_cast<int>(i / 4), i % 4),
                c.dtype, &b.recv[i * 4]);
  }
  EXPECT_EQ(checkResult(c, key, 0, 2, b), std::nullopt);
  encodeValue(NAN, c.dtype, &b.recv[size_t{5} * 4]);
  size_t non_finite = 0;
  EXPECT_NE(checkResult(c, key, 0, 2, b), std::nullopt);
  EXPECT_EQ(checkResult(c, key, 0, 2, b, &non_finite), std::nullopt);
  EXPECT_EQ(non_finite, 1u);
  // A flipped bit is still a wrong result, until it is flipped back.
  flipOutputBit(c, b, 2 * 32 + 22);
  non_finite = 0;
  EXPECT_NE(checkResult(c, key, 0, 2, b, &non_finite), std::nullopt);
  flipOutputBit(c, b, 2 * 32 + 22);
  EXPECT_EQ(checkResult(c, key, 0, 2, b, &non_finite), std::nullopt);
}

}  // namespace
}  // namespace ncclscope::sim
