// The coalesced op (several collectives of one communicator in one ncclGroupStart/End, as
// PyTorch's ProcessGroupNCCL startCoalescing/endCoalescing issues them): its parsing, every error,
// which faults fit it, and the data that keeps its collectives apart.
#include <gtest/gtest.h>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/names.h"
#include "sim/scenario/op_data.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

using testing::parse;
using testing::parseError;

// A scenario with `ops` (a JSON array text) as step 0's ops and `faults` spliced in.
std::string withOps(const std::string& ops, const std::string& faults = "[]") {
  return R"({"communicators": [{"name": "dp", "split": {"by": "block", "size": 2}}],
             "steps": [{"ops": )" +
         ops + R"(}], "faults": )" + faults + "}";
}

const char* kBucket = R"([{"op": "coalesced", "comm": "dp", "ops": [
    {"op": "allreduce", "count": 65536, "dtype": "bfloat16"},
    {"op": "allreduce", "count": 1024},
    {"op": "reducescatter", "count": 4096, "redop": "avg"},
    {"op": "allgather", "comm": "dp", "count": 512},
    {"op": "broadcast", "bytes": 64, "dtype": "half", "root": 1}]}])";

TEST(CoalescedParse, ReadsItsCollectivesOnItsCommunicator) {
  const Scenario s = parse(withOps(kBucket));
  ASSERT_EQ(s.steps[0].ops.size(), 1u);
  const OpSpec& op = s.steps[0].ops[0];
  EXPECT_EQ(op.kind, OpKind::kCoalesced);
  EXPECT_EQ(op.comm, "dp");
  ASSERT_EQ(op.ops.size(), 5u);
  EXPECT_EQ(op.ops[0].kind, OpKind::kAllReduce);
  EXPECT_EQ(op.ops[0].count, 65536u);
  EXPECT_EQ(op.ops[0].dtype, ncclBfloat16);
  EXPECT_EQ(op.ops[1].dtype, ncclFloat32) << "inner ops take the usual defaults";
  EXPECT_EQ(op.ops[2].redop, RedOp::kAvg);
  EXPECT_EQ(op.ops[4].count, 32u);  // 64 bytes of half
  EXPECT_EQ(op.ops[4].root, 1);
  for (const OpSpec& inner : op.ops) {
    EXPECT_EQ(inner.comm, "dp") << "every collective is on the coalesced op's communicator";
    EXPECT_TRUE(inner.ops.empty());
  }
}

TEST(CoalescedParse, WorldByDefaultOneCollectiveAndEveryCollectiveKind) {
  const Scenario one = parse(withOps(R"([{"op": "coalesced", "ops": [
      {"op": "allreduce", "count": 8}]}])"));
  EXPECT_EQ(one.steps[0].ops[0].comm, "world");
  EXPECT_EQ(one.steps[0].ops[0].ops.size(), 1u);
  const Scenario all = parse(withOps(R"([{"op": "coalesced", "ops": [
      {"op": "allreduce", "count": 8, "redop": "premulsum", "scalar": 4},
      {"op": "broadcast", "count": 8}, {"op": "reduce", "count": 8, "root": 1},
      {"op": "allgather", "count": 8}, {"op": "reducescatter", "count": 8},
      {"op": "alltoall", "count": 8, "in_place": true}, {"op": "gather", "count": 8},
      {"op": "scatter", "count": 8}]}])"));
  EXPECT_EQ(all.steps[0].ops[0].ops.size(), 8u);
  // 64 collectives is the most one coalesced op holds.
  std::string many = R"([{"op": "coalesced", "ops": [)";
  for (int i = 0; i < 64; ++i)
    many += std::string(i ? "," : "") + R"({"op": "allreduce", "count": 1})";
  EXPECT_EQ(parse(withOps(many + "]}]")).steps[0].ops[0].ops.size(), 64u);
}

struct BadCoalescedStep {
  std::string json;
  const char* want;  // expected substring of "test.json: PATH: MESSAGE"
};

TEST(CoalescedParse, EveryErrorNamesTheStepOpAndProblem) {
  std::string too_many = R"([{"op": "coalesced", "ops": [)";
  for (int i = 0; i < 65; ++i) {
    too_many += std::string(i ? "," : "") + R"({"op": "allreduce", "count": 1})";
  }
  const std::vector<BadCoalescedStep> cases = {
      {withOps(R"([{"op": "coalesced", "ops": []}])"),
       "steps[0].ops[0].ops: a coalesced op holds 1 to 64 collectives, got 0"},
      {withOps(too_many + "]}]"),
       "steps[0].ops[0].ops: a coalesced op holds 1 to 64 collectives, got 65"},
      {withOps(R"([{"op": "coalesced"}])"), "steps[0].ops[0].ops: required key is missing"},
      {withOps(R"([{"op": "coalesced", "ops": {"op": "allreduce"}}])"), "steps[0].ops[0].ops: "},
      {withOps(R"([{"op": "coalesced", "count": 8, "ops": [{"op": "allreduce", "count": 8}]}])"),
       "steps[0].ops[0].count: unknown key (allowed here: op, comm, ops)"},
      {withOps(R"([{"op": "allreduce", "count": 8, "ops": []}])"),
       "steps[0].ops[0].ops: 'ops' only applies to op coalesced"},
      {withOps(R"([{"op": "allreduce", "count": 8}, {"op": "coalesced", "comm": "dp", "ops": [
           {"op": "allreduce", "count": 8}, {"op": "allgather", "comm": "world", "count": 8}]}])"),
       "steps[0].ops[1].ops[1].comm: 'world' is not the coalesced op's communicator 'dp' (one "
       "group, one communicator)"},
      {withOps(R"([{"op": "coalesced", "ops": [{"op": "pipeline", "count": 8}]}])"),
       "steps[0].ops[0].ops[0].op: a coalesced op holds collectives (allreduce, broadcast, "
       "reduce, allgather, reducescatter, alltoall, gather, scatter), not pipeline"},
      {withOps(R"([{"op": "coalesced", "ops": [{"op": "alltoallv", "count": 8}]}])"),
       "steps[0].ops[0].ops[0].op: a coalesced op holds collectives"},
      {withOps(R"([{"op": "coalesced", "ops": [{"op": "coalesced", "ops": [
           {"op": "allreduce", "count": 8}]}]}])"),
       "steps[0].ops[0].ops[0].op: a coalesced op holds collectives (allreduce, broadcast, "
       "reduce, allgather, reducescatter, alltoall, gather, scatter), not coalesced"},
      {withOps(R"([{"op": "coalesced", "ops": [{"op": "allreduce", "count": 8},
           {"op": "allgather", "count": 8, "redop": "sum"}]}])"),
       "steps[0].ops[0].ops[1].redop: allgather does not reduce"},
      {withOps(R"([{"op": "coalesced", "ops": [{"op": "allreduce"}]}])"),
       "steps[0].ops[0].ops[0]: give the size as exactly one of 'count'"},
      {withOps(R"([{"op": "coalesced", "ops": [{"op": "alreduce", "count": 8}]}])"),
       "steps[0].ops[0].ops[0].op: unknown op 'alreduce'"},
      {withOps(R"([{"op": "coalesced", "ops": [7]}])"),
       "steps[0].ops[0].ops[0]: expected an object, got number"},
      {withOps(R"([{"op": "coalesced", "comm": "ep", "ops": [{"op": "allreduce", "count": 8}]}])"),
       "steps[0].ops[0].comm: unknown communicator 'ep'"},
  };
  for (const BadCoalescedStep& c : cases) {
    const std::string err = parseError(c.json);
    EXPECT_NE(err.find(c.want), std::string::npos) << "want: " << c.want << "\ngot: " << err;
    EXPECT_EQ(err.rfind("test.json: ", 0), 0u) << err;
  }
}

TEST(CoalescedParse, RootsOfItsCollectivesFitEveryGroupOfTheJob) {
  const Scenario s = parse(withOps(kBucket));
  EXPECT_NO_THROW(checkScenarioForRanks(s, 4));
  const Scenario far = parse(withOps(R"([{"op": "coalesced", "comm": "dp", "ops": [
      {"op": "allreduce", "count": 8}, {"op": "gather", "count": 8, "root": 2}]}])"));
  try {
    checkScenarioForRanks(far, 4);
    ADD_FAILURE() << "root 2 of a 2-rank dp group passed";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("steps[0].ops[0].ops[1].root: root 2 does not exist in "
                                         "every 'dp' group at 4 ranks"),
              std::string::npos)
        << e.what();
  }
}

// The faults that address the whole group, and those that change its first collective.
TEST(CoalescedFaults, FaultsOnTheWholeGroupAndOnItsFirstCollective) {
  for (const char* fault :
       {R"({"kind": "hang", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "stuck_before", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "skip", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "extra_op", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "extra_op", "ranks": [1], "step": 0, "op": 0,
            "extra": {"op": "coalesced", "ops": [{"op": "allreduce", "count": 2}]}})",
        R"({"kind": "crash", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "freeze", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "early_exit", "ranks": [1], "step": 0, "op": 0})",
        R"({"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0, "count": 7})",
        R"({"kind": "wrong_dtype", "ranks": [1], "step": 0, "op": 0, "dtype": "float32"})",
        R"({"kind": "wrong_op", "ranks": [1], "step": 0, "op": 0, "as_op": "allgather"})",
        R"({"kind": "wrong_redop", "ranks": [1], "step": 0, "op": 0, "redop": "max"})",
        R"({"kind": "nan_input", "ranks": [1], "step": 0, "op": 0, "index": 65535})",
        R"({"kind": "flip_output", "ranks": [1], "step": 0, "op": 0, "bit": 100})"}) {
    EXPECT_EQ(parseError(withOps(kBucket, std::string("[") + fault + "]")), "") << fault;
  }
}

TEST(CoalescedFaults, FaultsThatDoNotFitAreRefusedNamingTheFaultAndOp) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"kind": "wrong_peer", "ranks": [1], "step": 0, "op": 0})",
       "faults[0].op: wrong_peer applies to pipeline ops, this is coalesced"},
      {R"({"kind": "send_first", "ranks": [1], "step": 0, "op": 0})",
       "faults[0].op: send_first applies to ungrouped pipeline ops, this is coalesced"},
      {R"({"kind": "wrong_root", "ranks": [1], "step": 0, "op": 0})",
       "faults[0].op: allreduce (the coalesced op's first collective) has no root"},
      {R"({"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0, "count": 65536})",
       "faults[0].count: equals the op's count"},
      {R"({"kind": "wrong_dtype", "ranks": [1], "step": 0, "op": 0, "dtype": "bfloat16"})",
       "faults[0].dtype: equals the op's dtype"},
      {R"({"kind": "wrong_op", "ranks": [1], "step": 0, "op": 0, "as_op": "allreduce"})",
       "faults[0].as_op: must name a different collective"},
      {R"({"kind": "wrong_op", "ranks": [1], "step": 0, "op": 0, "as_op": "coalesced"})",
       "faults[0].as_op: must name a different collective"},
      {R"({"kind": "nan_input", "ranks": [1], "step": 0, "op": 0, "index": 65536})",
       "faults[0].index: the op's input has 65536 elements"},
      {R"({"kind": "flip_output", "ranks": [1], "step": 0, "op": 0, "bit": 1048576})",
       "faults[0].bit: the op's output holds 1048576 bits (65536 x ncclBfloat16)"},
      {R"({"kind": "hang", "ranks": [1], "step": 0, "op": 1})",
       "faults[0].op: step 0 has 1 ops (indices from 0)"},
  };
  for (const auto& [fault, want] : cases) {
    const std::string err = parseError(withOps(kBucket, std::string("[") + fault + "]"));
    EXPECT_NE(err.find(want), std::string::npos) << "want: " << want << "\ngot: " << err;
  }
  // The first collective decides: an allgather first does not reduce.
  const std::string gather_first = withOps(
      R"([{"op": "coalesced", "ops": [{"op": "allgather", "count": 8},
          {"op": "allreduce", "count": 8}]}])",
      R"([{"kind": "wrong_redop", "ranks": [1], "step": 0, "op": 0}])");
  EXPECT_NE(parseError(gather_first)
                .find("faults[0].op: allgather (the coalesced op's first collective) does not "
                      "reduce"),
            std::string::npos)
      << parseError(gather_first);
  const std::string int_first = withOps(
      R"([{"op": "coalesced", "ops": [{"op": "allreduce", "count": 8, "dtype": "int32"},
          {"op": "allreduce", "count": 8}]}])",
      R"([{"kind": "nan_input", "ranks": [1], "step": 0, "op": 0}])");
  EXPECT_NE(parseError(int_first).find("nan_input needs a floating-point dtype, this allreduce "
                                       "(the coalesced op's first collective) is ncclInt32"),
            std::string::npos)
      << parseError(int_first);
}

// Each collective of a group has its own data: outputs landing in a sibling's buffer (a library
// that mixed up the group's tasks) fail the check.
TEST(CoalescedData, EachCollectiveOfAGroupHasItsOwnData) {
  OpCall c;
  c.kind = OpKind::kAllGather;
  c.count = 16;
  c.dtype = ncclBfloat16;
  const int n = 4;
  const PatternKey first{29, 1, 3, 0, 0};
  const PatternKey second{29, 1, 3, 0, 1};
  const PatternKey alone{29, 1, 3, 0};
  EXPECT_NE(prepareBuffers(c, first, 2, n).send, prepareBuffers(c, second, 2, n).send);
  EXPECT_NE(prepareBuffers(c, first, 2, n).send, prepareBuffers(c, alone, 2, n).send);
  // What every rank of `key` sends, gathered as the library would.
  auto gathered = [&](const PatternKey& key) {
    OpBuffers out = prepareBuffers(c, key, 0, n);
    const size_t bytes = c.count * dtypeSize(c.dtype);
    for (int r = 0; r < n; ++r) {
      const OpBuffers b = prepareBuffers(c, key, r, n);
      std::copy(b.send.begin(), b.send.begin() + static_cast<std::ptrdiff_t>(bytes),
                out.recv.begin() + static_cast<std::ptrdiff_t>(bytes * static_cast<size_t>(r)));
    }
    return out;
  };
  EXPECT_EQ(checkResult(c, second, 0, n, gathered(second)), std::nullopt);
  EXPECT_TRUE(checkResult(c, second, 0, n, gathered(first)).has_value());
}

}  // namespace
}  // namespace ncclscope::sim
