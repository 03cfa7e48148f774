// Every validation error names the file, the JSON path and the problem.
#include <gtest/gtest.h>

#include "sim/scenario/comm_layout.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

using testing::parse;
using testing::parseError;
using testing::withFaults;

struct BadCase {
  const char* json;
  const char* want;  // expected substring of "test.json: PATH: MESSAGE"
};

class ScenarioErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ScenarioErrors, NamesFilePathAndProblem) {
  const std::string err = parseError(GetParam().json);
  EXPECT_NE(err.find(GetParam().want), std::string::npos) << "got: " << err;
  EXPECT_EQ(err.rfind("test.json: ", 0), 0u) << err;
}

INSTANTIATE_TEST_SUITE_P(
    Format, ScenarioErrors,
    ::testing::Values(
        BadCase{"{", "not valid JSON"}, BadCase{"{}", "test.json: steps: required key is missing"},
        BadCase{R"({"steps": []})", "steps: needs at least one step"},
        BadCase{R"({"stepz": 1})", "stepz: unknown key"},
        BadCase{R"({"repeat": 0, "steps": []})", "repeat: 0 is out of range"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": 1},
                 {"op": "allreduce", "count": 1, "dtype": "flaot32"}]}]})",
                "steps[0].ops[1].dtype: unknown dtype 'flaot32'"},
        BadCase{R"({"steps": [{"ops": [{"op": "alreduce", "count": 1}]}]})",
                "steps[0].ops[0].op: unknown op 'alreduce'"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce"}]}]})",
                "steps[0].ops[0]: give the size as exactly one of 'count'"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "bytes": 6}]}]})",
                "steps[0].ops[0].bytes: 6 bytes is not a whole number of ncclFloat32"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": 1, "redop": "mean"}]}]})",
                "steps[0].ops[0].redop: unknown redop 'mean'"},
        BadCase{R"({"steps": [{"ops": [{"op": "allgather", "count": 1, "redop": "sum"}]}]})",
                "steps[0].ops[0].redop: allgather does not reduce"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": 1, "root": 1}]}]})",
                "steps[0].ops[0].root: allreduce has no root"},
        BadCase{R"({"steps": [{"ops": [{"op": "allgather", "count": 1, "in_place": true}]}]})",
                "steps[0].ops[0].in_place: 'in_place' only applies to alltoall, gather and "
                "scatter, not allgather"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": 1},
                 {"op": "allreduce", "count": 1, "counts": "equal"}]}]})",
                "steps[0].ops[1].counts: 'counts' only applies to alltoallv, not allreduce"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "counts": "even"}]}]})",
                "steps[0].ops[0].counts: unknown counts 'even' (expected uneven or equal)"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "counts": 2}]}]})",
                "steps[0].ops[0].counts: "},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv"}]}]})",
                "steps[0].ops[0]: give the size as exactly one of 'count'"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "bytes": 4}]}]})",
                "steps[0].ops[0]: give the size as exactly one of 'count'"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "bytes": 3, "dtype": "half"}]}]})",
                "steps[0].ops[0].bytes: 3 bytes is not a whole number of ncclFloat16"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "redop": "sum"}]}]})",
                "steps[0].ops[0].redop: alltoallv does not reduce"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "scalar": 2}]}]})",
                "steps[0].ops[0].scalar: 'scalar' only applies to redop premulsum"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "root": 0}]}]})",
                "steps[0].ops[0].root: alltoallv has no root"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "grouped": false}]}]})",
                "steps[0].ops[0]: 'direction' and 'grouped' only apply to op pipeline"},
        BadCase{
            R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "direction": "backward"}]}]})",
            "steps[0].ops[0]: 'direction' and 'grouped' only apply to op pipeline"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "in_place": true}]}]})",
                "steps[0].ops[0].in_place: 'in_place' only applies to alltoall, gather and "
                "scatter, not alltoallv"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "splits": [1, 2]}]}]})",
                "steps[0].ops[0].splits: unknown key"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": 1, "captured": 1}]}]})",
                "steps[0].ops[0].captured: expected"},
        BadCase{R"({"steps": [{"ops": [{"op": "coalesced", "ops": [
                  {"op": "allreduce", "count": 1, "captured": true}]}]}]})",
                "steps[0].ops[0].ops[0].captured: 'captured' does not apply inside a coalesced op"},
        BadCase{R"({"steps": [{"ops": [{"op": "alltoallv", "count": 1, "comm": "ep"}]}]})",
                "steps[0].ops[0].comm: unknown communicator 'ep'"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": 1, "comm": "tp"}]}]})",
                "steps[0].ops[0].comm: unknown communicator 'tp'"},
        BadCase{R"({"steps": [{"ops": [{"op": "allreduce", "count": -3}]}]})",
                "steps[0].ops[0].count: -3 is out of range"},
        BadCase{R"({"steps": [{"compute": {"per_rank": {"x": 1}}, "ops": []}]})",
                "steps[0].compute.per_rank.x: key must be a rank number"},
        BadCase{R"({"communicators": [{"name": "tp", "split": {"by": "blocks", "size": 2}}],
                 "steps": []})",
                "communicators[0].split.by: unknown split 'blocks'"},
        BadCase{R"({"communicators": [{"name": "tp", "parent": "dp",
                 "split": {"by": "block", "size": 2}}], "steps": []})",
                "communicators[0].parent: unknown communicator 'dp'"},
        BadCase{R"({"communicators": [{"name": "world", "split": {"by": "block", "size": 2}}],
                 "steps": []})",
                "communicators[0].name: 'world' is already defined"}));

INSTANTIATE_TEST_SUITE_P(
    Faults, ScenarioErrors,
    ::testing::Values(
        BadCase{R"({"faults": [{"kind": "hnag", "ranks": [1]}], "steps": [{"ops": []}]})",
                "faults[0].kind: unknown fault kind 'hnag'"},
        BadCase{R"({"faults": [{"kind": "hang", "ranks": [1], "step": 0}],
                 "steps": [{"ops": []}]})",
                "faults[0].op: required key is missing"},
        BadCase{R"({"faults": [{"kind": "hang", "step": 0, "op": 0}], "steps": [{"ops": []}]})",
                "faults[0].ranks: required key is missing"},
        BadCase{R"({"faults": [{"kind": "hang", "ranks": [], "step": 0, "op": 0}],
                 "steps": [{"ops": []}]})",
                "faults[0].ranks: needs at least one rank"},
        BadCase{R"({"faults": [{"kind": "hang", "ranks": [1], "step": 0, "op": 0, "mode": "x"}],
                 "steps": [{"ops": []}]})",
                "faults[0].mode: unknown key for a hang fault"},
        BadCase{R"({"faults": [{"kind": "crash", "ranks": [1], "step": 0, "mode": "sigterm"}],
                 "steps": [{"ops": []}]})",
                "faults[0].mode: unknown crash mode 'sigterm'"},
        BadCase{R"({"faults": [{"kind": "compute_slowdown", "ranks": [1], "step": 0}],
                 "steps": [{"ops": []}]})",
                "faults[0]: compute_slowdown needs exactly one of 'extra_ms' or 'factor'"},
        BadCase{R"({"faults": [{"kind": "slow_link", "ranks": [1], "step": 3, "until_step": 1,
                 "factor": 2}], "steps": [{"ops": []}]})",
                "faults[0].until_step: ends before it starts"},
        BadCase{R"({"faults": [{"kind": "never_join", "ranks": [1], "comm": "pp"}],
                 "steps": [{"ops": []}]})",
                "faults[0].comm: unknown communicator 'pp'"},
        // A hung link never recovers (what it sent is lost): no until_step, no op.
        BadCase{R"({"faults": [{"kind": "hung_link", "ranks": [1], "step": 0, "until_step": 2}],
                 "steps": [{"ops": []}]})",
                "faults[0].until_step: unknown key for a hung_link fault (allowed: kind, ranks, "
                "step)"},
        BadCase{R"({"faults": [{"kind": "hung_link", "ranks": [1], "step": 0, "op": 0}],
                 "steps": [{"ops": []}]})",
                "faults[0].op: unknown key for a hung_link fault"},
        BadCase{R"({"faults": [{"kind": "hung_link", "ranks": [1]}], "steps": [{"ops": []}]})",
                "faults[0].step: required key is missing"},
        BadCase{R"({"faults": [{"kind": "hung_link", "ranks": [1], "step": -1}],
                 "steps": [{"ops": []}]})",
                "faults[0].step: "},
        BadCase{R"({"faults": [{"kind": "hung_link", "ranks": [1], "step": "2"}],
                 "steps": [{"ops": []}]})",
                "faults[0].step: "},
        BadCase{R"({"faults": [{"kind": "hung_link", "ranks": [1], "step": 4}],
                 "steps": [{"ops": []}]})",
                "faults[0].step: step 4 does not exist"},
        BadCase{R"({"faults": [{"kind": "hung_lnk", "ranks": [1], "step": 0}],
                 "steps": [{"ops": []}]})",
                "faults[0].kind: unknown fault kind 'hung_lnk'"}));

// alltoallv is sends and receives: the faults that need a collective, a root, a reduction or a
// pipeline's single peer do not apply to it.
TEST(ScenarioErrors, FaultsThatDoNotFitAlltoallv) {
  struct Case {
    const char* fault;
    const char* want;
  };
  for (const Case& c : {
           Case{R"({"kind": "wrong_op", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: wrong_op applies to collectives, alltoallv is sends and receives"},
           Case{R"({"kind": "wrong_peer", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: wrong_peer applies to pipeline ops, this is alltoallv"},
           Case{R"({"kind": "send_first", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: send_first applies to ungrouped pipeline ops, this is alltoallv"},
           Case{R"({"kind": "wrong_root", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: alltoallv has no root"},
           Case{R"({"kind": "wrong_redop", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: alltoallv does not reduce"},
           Case{R"({"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0, "count": 4})",
                "faults[0].count: equals the op's count"},
           Case{R"({"kind": "wrong_op", "ranks": [1], "step": 0, "op": 1, "as_op": "alltoallv"})",
                "faults[0].as_op: must name a different collective"},
       }) {
    const std::string err =
        parseError(std::string(R"({"steps": [{"ops": [{"op": "alltoallv", "count": 4},
                                           {"op": "allreduce", "count": 4}]}], "faults": [)") +
                   c.fault + "]}");
    EXPECT_NE(err.find(c.want), std::string::npos) << "fault " << c.fault << "\ngot: " << err;
    EXPECT_EQ(err.rfind("test.json: ", 0), 0u) << err;
  }
}

TEST(ScenarioErrors, FaultsMustFitTheirOp) {
  struct Case {
    const char* fault;
    const char* want;
  };
  for (const Case& c : {
           Case{R"({"kind": "hang", "ranks": [1], "step": 2, "op": 0})",
                "faults[0].step: step 2 does not exist (1 steps x repeat 2 = 2)"},
           Case{R"({"kind": "skip", "ranks": [1], "step": 1, "op": 3})",
                "faults[0].op: step 1 has 3 ops"},
           Case{R"({"kind": "wrong_peer", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: wrong_peer applies to pipeline ops, this is allreduce"},
           Case{R"({"kind": "send_first", "ranks": [1], "step": 0, "op": 2})",
                "faults[0].op: send_first applies to ungrouped pipeline ops, this is pipeline "
                "(grouped)"},
           Case{R"({"kind": "wrong_root", "ranks": [1], "step": 0, "op": 0})",
                "faults[0].op: allreduce has no root"},
           Case{R"({"kind": "wrong_redop", "ranks": [1], "step": 0, "op": 1})",
                "faults[0].op: broadcast does not reduce"},
           Case{R"({"kind": "wrong_op", "ranks": [1], "step": 0, "op": 0, "as_op": "allreduce"})",
                "faults[0].as_op: must name a different collective"},
           Case{R"({"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0, "count": 8})",
                "faults[0].count: equals the op's count"},
           Case{R"({"kind": "extra_op", "ranks": [1], "step": 0, "op": 0,
                    "extra": {"op": "allreduce", "count": 1, "comm": "zz"}})",
                "faults[0].extra.comm: unknown communicator 'zz'"},
       }) {
    const std::string err = parseError(withFaults(std::string("[") + c.fault + "]"));
    EXPECT_NE(err.find(c.want), std::string::npos) << "fault " << c.fault << "\ngot: " << err;
  }
}

std::string rankError(const std::string& json, int nranks) {
  try {
    checkScenarioForRanks(parse(json), nranks);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioErrors, JobSizeChecksNameThePath) {
  EXPECT_NE(rankError(withFaults(R"([{"kind": "hang", "ranks": [1, 9], "step": 0, "op": 0}])"), 4)
                .find("faults[0].ranks[1]: rank 9 does not exist at 4 ranks"),
            std::string::npos);
  EXPECT_NE(rankError(withFaults(R"([{"kind": "hang", "ranks": [-5], "step": 0, "op": 0}])"), 4)
                .find("faults[0].ranks[0]: rank -5 does not exist"),
            std::string::npos);
  EXPECT_NE(rankError(R"({"min_ranks": 8, "steps": [{"ops": []}]})", 4)
                .find("min_ranks: this scenario needs at least 8 ranks, got 4"),
            std::string::npos);
  // tp groups of 2 at 5 ranks leave a group {4} of one rank, where root 1 does not exist.
  EXPECT_NE(rankError(R"({"communicators": [{"name": "tp", "split": {"by": "block", "size": 2}}],
                         "steps": [{"ops": [{"op": "gather", "comm": "tp", "count": 1, "root": 1}]}]})",
                      5)
                .find("steps[0].ops[0].root: root 1 does not exist in every 'tp' group"),
            std::string::npos);
  EXPECT_NE(rankError(R"({"steps": [{"compute": {"per_rank": {"7": 1}}, "ops": []}]})", 4)
                .find("steps[0].compute.per_rank.7: rank 7 does not exist"),
            std::string::npos);
  EXPECT_EQ(rankError(withFaults(R"([{"kind": "hang", "ranks": [-1], "step": 0, "op": 0}])"), 4),
            "");
}

}  // namespace
}  // namespace ncclscope::sim
