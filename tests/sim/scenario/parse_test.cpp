#include <gtest/gtest.h>

#include "sim/scenario/names.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

using testing::parse;
using testing::withFaults;

TEST(ScenarioParse, ReadsCommunicatorsStepsAndDefaults) {
  const Scenario s = parse(R"({
    "name": "x", "seed": 9, "repeat": 3, "compute": {"ms": 2, "per_rank": {"-1": 5}},
    "communicators": [
      {"name": "tp", "split": {"by": "block", "size": 4}},
      {"name": "dp", "parent": "tp", "split": {"by": "stride", "stride": 2}, "key": "reverse"}],
    "steps": [{"name": "a", "ops": [
      {"op": "reducescatter", "comm": "dp", "bytes": 64, "dtype": "ncclBfloat16", "redop": "avg"},
      {"op": "pipeline", "comm": "tp", "count": 3, "direction": "backward", "grouped": false},
      {"op": "allreduce", "count": 1, "redop": "premulsum", "scalar": 4}]}]})");
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(s.totalSteps(), 3);
  EXPECT_EQ(s.compute.per_rank.at(-1), 5.0);
  ASSERT_EQ(s.comms.size(), 2u);
  EXPECT_EQ(s.comms[1].parent, "tp");
  EXPECT_EQ(s.comms[1].by, SplitBy::kStride);
  EXPECT_EQ(s.comms[1].key, SplitKey::kReverse);
  const auto& ops = s.steps[0].ops;
  EXPECT_EQ(ops[0].kind, OpKind::kReduceScatter);
  EXPECT_EQ(ops[0].count, 32u);  // 64 bytes of bfloat16
  EXPECT_EQ(ops[0].redop, RedOp::kAvg);
  EXPECT_EQ(ops[1].direction, PipeDirection::kBackward);
  EXPECT_FALSE(ops[1].grouped);
  EXPECT_EQ(ops[2].comm, "world");
  EXPECT_EQ(ops[2].dtype, ncclFloat32);
  EXPECT_EQ(ops[2].premul_scalar, 4.0);
}

TEST(ScenarioParse, ExchangeAndSendFirst) {
  const Scenario s = parse(R"({"steps": [{"ops": [
      {"op": "pipeline", "count": 3, "direction": "exchange", "grouped": false}]}],
    "faults": [{"kind": "send_first", "ranks": [3], "step": 0, "op": 0}]})");
  EXPECT_EQ(s.steps[0].ops[0].direction, PipeDirection::kExchange);
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::kSendFirst);
}

TEST(ScenarioParse, InPlaceAlltoAllGatherScatter) {
  const Scenario s = parse(R"({"steps": [{"ops": [
      {"op": "alltoall", "count": 2, "in_place": true},
      {"op": "gather", "count": 2, "root": 1, "in_place": true},
      {"op": "scatter", "count": 2}]}]})");
  const auto& ops = s.steps[0].ops;
  EXPECT_TRUE(ops[0].in_place);
  EXPECT_TRUE(ops[1].in_place);
  EXPECT_FALSE(ops[2].in_place);
}

TEST(ScenarioParse, CapturedIsABooleanOfAnyOneOp) {
  const Scenario s = parse(R"({"steps": [{"ops": [
      {"op": "allreduce", "count": 2, "captured": true},
      {"op": "alltoallv", "count": 2, "captured": true},
      {"op": "broadcast", "count": 2, "captured": false},
      {"op": "allgather", "count": 2}]}]})");
  const auto& ops = s.steps[0].ops;
  EXPECT_TRUE(ops[0].captured);
  EXPECT_TRUE(ops[1].captured);
  EXPECT_FALSE(ops[2].captured);
  EXPECT_FALSE(ops[3].captured);
}

TEST(ScenarioParse, AlltoallvTakesSizeDtypeCommAndCounts) {
  const Scenario s =
      parse(R"({"communicators": [{"name": "ep", "split": {"by": "block", "size": 2}}],
    "steps": [{"ops": [
      {"op": "alltoallv", "count": 3},
      {"op": "alltoallv", "comm": "ep", "bytes": 10, "dtype": "bfloat16", "counts": "equal"},
      {"op": "alltoallv", "count": 1, "counts": "uneven"}]}]})");
  const auto& ops = s.steps[0].ops;
  EXPECT_EQ(ops[0].kind, OpKind::kAllToAllV);
  EXPECT_EQ(ops[0].comm, "world");
  EXPECT_EQ(ops[0].dtype, ncclFloat32);
  EXPECT_EQ(ops[0].count, 3u);
  EXPECT_FALSE(ops[0].equal_counts);
  EXPECT_EQ(ops[1].comm, "ep");
  EXPECT_EQ(ops[1].count, 5u);  // 10 bytes of bfloat16
  EXPECT_TRUE(ops[1].equal_counts);
  EXPECT_FALSE(ops[2].equal_counts);
  EXPECT_EQ(opKindName(OpKind::kAllToAllV), "alltoallv");
}

// Per-op faults that do not depend on the op being a collective apply to alltoallv too.
TEST(ScenarioParse, AlltoallvTakesTheFaultsThatFitIt) {
  const Scenario s = parse(R"({"steps": [{"ops": [{"op": "alltoallv", "count": 4}]}], "faults": [
    {"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0, "count": 5},
    {"kind": "wrong_dtype", "ranks": [1], "step": 0, "op": 0},
    {"kind": "skip", "ranks": [2], "step": 0, "op": 0},
    {"kind": "extra_op", "ranks": [2], "step": 0, "op": 0},
    {"kind": "hang", "ranks": [0], "step": 0, "op": 0},
    {"kind": "stuck_before", "ranks": [0], "step": 0, "op": 0},
    {"kind": "crash", "ranks": [0], "step": 0, "op": 0}]})");
  EXPECT_EQ(s.faults.size(), 7u);
}

TEST(ScenarioParse, AcceptsEveryNcclDtypeSpelling) {
  EXPECT_EQ(parseDtype("ncclHalf"), ncclFloat16);
  EXPECT_EQ(parseDtype("half"), ncclFloat16);
  EXPECT_EQ(parseDtype("FLOAT8E4M3"), ncclFloat8e4m3);
  EXPECT_EQ(parseDtype("char"), ncclInt8);
  EXPECT_EQ(parseDtype("ncclDouble"), ncclFloat64);
  EXPECT_FALSE(parseDtype("float128"));
  EXPECT_EQ(dtypeName(ncclFloat), "ncclFloat32");
}

// One good fault of every kind parses with its options.
TEST(ScenarioParse, EveryFaultKind) {
  const Scenario s = parse(withFaults(R"([
    {"kind": "hang", "ranks": [1], "step": 1, "op": 0},
    {"kind": "stuck_before", "ranks": [0, -1], "step": 0, "op": 1},
    {"kind": "skip", "ranks": [2], "step": 1, "op": 0},
    {"kind": "extra_op", "ranks": [2], "step": 1, "op": 0, "extra": {"op": "allgather", "count": 2}},
    {"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0, "count": 16},
    {"kind": "wrong_dtype", "ranks": [1], "step": 0, "op": 0, "dtype": "int8"},
    {"kind": "wrong_op", "ranks": [1], "step": 0, "op": 0, "as_op": "allgather"},
    {"kind": "wrong_redop", "ranks": [1], "step": 0, "op": 0, "redop": "prod"},
    {"kind": "wrong_root", "ranks": [1], "step": 0, "op": 1, "root": 1},
    {"kind": "wrong_peer", "ranks": [1], "step": 0, "op": 2, "peer_shift": 2},
    {"kind": "compute_slowdown", "ranks": [3], "step": 0, "until_step": 1, "factor": 2.5},
    {"kind": "compute_slowdown", "ranks": [3], "step": 1, "extra_ms": 10},
    {"kind": "slow_link", "ranks": [3], "step": 1, "factor": 4},
    {"kind": "crash", "ranks": [1], "step": 1, "mode": "segfault"},
    {"kind": "freeze", "ranks": [1], "step": 1, "op": 2},
    {"kind": "early_exit", "ranks": [1], "step": 1},
    {"kind": "never_join", "ranks": [1], "comm": "tp"},
    {"kind": "hung_link", "ranks": [-1], "step": 1}])"));
  ASSERT_EQ(s.faults.size(), 18u);
  EXPECT_EQ(s.faults[1].ranks, (std::vector<int>{0, -1}));
  EXPECT_EQ(s.faults[3].extra->kind, OpKind::kAllGather);
  EXPECT_EQ(*s.faults[4].count, 16u);
  EXPECT_EQ(*s.faults[5].dtype, ncclInt8);
  EXPECT_EQ(*s.faults[6].as_op, OpKind::kAllGather);
  EXPECT_EQ(*s.faults[7].redop, RedOp::kProd);
  EXPECT_EQ(*s.faults[8].root, 1);
  EXPECT_EQ(s.faults[9].peer_shift, 2);
  EXPECT_EQ(s.faults[10].until_step, 1);
  EXPECT_EQ(s.faults[10].factor, 2.5);
  EXPECT_EQ(s.faults[11].extra_ms, 10.0);
  EXPECT_EQ(s.faults[13].crash_mode, CrashMode::kSegfault);
  EXPECT_FALSE(s.faults[13].op.has_value());
  EXPECT_EQ(*s.faults[14].op, 2);
  EXPECT_EQ(s.faults[16].comm, "tp");
  EXPECT_EQ(s.faults[17].kind, FaultKind::kHungLink);
  EXPECT_EQ(s.faults[17].ranks, (std::vector<int>{-1}));
  EXPECT_EQ(s.faults[17].step, 1);
  EXPECT_FALSE(s.faults[17].op.has_value());
}

TEST(ScenarioParse, CommentsAreAllowedEverywhere) {
  const Scenario s = parse(R"({"comment": "top", /* c */ "steps": [{"comment": "s", // c
      "ops": [{"op": "allreduce", "count": 1, "comment": "o"}]}]})");
  EXPECT_EQ(s.steps.size(), 1u);
}

}  // namespace
}  // namespace ncclscope::sim
