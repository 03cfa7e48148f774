// `ncclscope-sim-rank --plan`: the calls a rank would make, with the effect of every fault that
// changes them, and the point where a fault ends the rank.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace ncclscope::sim {
namespace {

using Json = nlohmann::json;

struct Plan {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json members
  int exit_code = -1;
  std::vector<Json> calls;
  Json stop;  // null when the plan runs to the end
};

Plan planOf(const std::string& scenario, int rank, int nranks) {
  Plan p;
#ifdef NCCLSCOPE_SIM_RANK_PROGRAM
  // No run directory, no emulator job: a plan touches nothing.
  // A bare name is a shipped example; a path, a scenario the test wrote.
  const std::string file = scenario.find('/') == std::string::npos
                               ? std::string(NCCLSCOPE_SCENARIOS_DIR) + "/" + scenario
                               : scenario;
  const std::string cmd = std::string("env -u NCCLSCOPE_DIR -u NCCLSCOPE_SIM_RUN_DIR ") +
                          NCCLSCOPE_SIM_RANK_PROGRAM + " " + file + " --plan --rank " +
                          std::to_string(rank) + " --nranks " + std::to_string(nranks) +
                          " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return p;
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const int status = pclose(f);
  p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  size_t start = 0;
  for (size_t end; (end = out.find('\n', start)) != std::string::npos; start = end + 1) {
    Json j = Json::parse(out.substr(start, end - start));
    if (j.at("type") == "stop") {
      p.stop = j;
    } else {
      EXPECT_TRUE(p.stop.is_null()) << "a call after the stop line: " << j.dump();
      p.calls.push_back(j);
    }
  }
#endif
  return p;
}

// The calls of one scenario op (global step, op index), in order.
std::vector<Json> at(const Plan& p, int step, int op) {
  std::vector<Json> out;
  for (const Json& j : p.calls) {
    if (j.at("step") == step && j.at("op_index") == op) out.push_back(j);
  }
  return out;
}

std::vector<std::string> opsOf(const std::vector<Json>& calls) {
  std::vector<std::string> ops;
  ops.reserve(calls.size());
  for (const Json& j : calls) ops.push_back(j.at("op"));
  return ops;
}

class RankPlan : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef NCCLSCOPE_SIM_RANK_PROGRAM
    GTEST_SKIP() << "the emulator is not built, so neither is the rank program";
#endif
  }
};

TEST_F(RankPlan, HealthyRankCreatesNamedCommsRunsEveryStepAndDestroysChildrenFirst) {
  const Plan p0 = planOf("healthy.json", 0, 4);
  ASSERT_EQ(p0.exit_code, 0);
  EXPECT_TRUE(p0.stop.is_null()) << p0.stop.dump();
  ASSERT_GE(p0.calls.size(), 9u);
  // Rank 0 makes the unique id; the trace names it after the communicator made from it.
  EXPECT_EQ(p0.calls[0].at("op"), "get_unique_id");
  EXPECT_EQ(p0.calls[0].at("comm"), "world");
  EXPECT_EQ(p0.calls[1].at("op"), "comm_init_rank_config");
  EXPECT_EQ(p0.calls[1].at("comm"), "world");
  EXPECT_EQ(p0.calls[1].at("nranks"), 4);
  const std::vector<std::string> splits = {p0.calls[2].at("new_comm"), p0.calls[3].at("new_comm"),
                                           p0.calls[4].at("new_comm")};
  EXPECT_EQ(splits, (std::vector<std::string>{"tp", "dp", "ep"}));
  EXPECT_EQ(p0.calls[4].at("comm"), "dp") << "ep is a split of dp";
  std::vector<std::string> destroyed;
  for (size_t i = p0.calls.size() - 4; i < p0.calls.size(); ++i) {
    EXPECT_EQ(p0.calls[i].at("op"), "comm_destroy");
    destroyed.push_back(p0.calls[i].at("comm"));
  }
  EXPECT_EQ(destroyed, (std::vector<std::string>{"ep", "dp", "tp", "world"}));
  // The grouped pipeline is bracketed by a group; premulsum creates and destroys its reduction.
  EXPECT_EQ(opsOf(at(p0, 0, 1)), (std::vector<std::string>{"group_start", "send", "group_end"}));
  EXPECT_EQ(opsOf(at(p0, 1, 3)),
            (std::vector<std::string>{"redop_create_premulsum", "allreduce", "redop_destroy"}));
  EXPECT_EQ(at(p0, 1, 3)[1].at("redop"), "premulsum");
  EXPECT_EQ(at(p0, 2, 1)[0].at("root"), 0);
  EXPECT_EQ(at(p0, 2, 1)[0].at("dtype"), "int64");
  EXPECT_EQ(at(p0, 5, 0).size(), 1u) << "the second repetition is planned too";

  const Plan p1 = planOf("healthy.json", 1, 4);
  EXPECT_EQ(p1.calls.at(0).at("op"), "comm_init_rank_config") << "only rank 0 makes the id";
  EXPECT_EQ(p1.calls.at(0).at("rank"), 1);
}

// As torch/csrc/cuda/nccl.cpp all2all_single_unequal_split: one group per op, in it for every
// peer in rank order (itself included) a send, then a receive, each left out when its part is
// empty; and what one rank sends a peer, that peer receives from it.
TEST_F(RankPlan, AlltoallvIsOneGroupOfSendsAndReceivesInPeerOrder) {
  const int n = 4;
  std::vector<Plan> plans;
  for (int r = 0; r < n; ++r) {
    plans.push_back(planOf("alltoallv.json", r, n));
    ASSERT_EQ(plans.back().exit_code, 0);
  }
  // World, step 0 (seed 11): rank 1 sends 3 x ((11 + 7 + 2 dst) % 4) to dst, receives
  // 3 x ((11 + 7 src + 2) % 4) from src; its parts with itself and to 3 are empty.
  const std::vector<Json> r1 = at(plans[1], 0, 0);
  ASSERT_EQ(opsOf(r1), (std::vector<std::string>{"group_start", "send", "recv", "send", "recv",
                                                 "recv", "group_end"}));
  const std::vector<std::pair<int, int>> peer_count = {{0, 6}, {0, 3}, {2, 6}, {2, 9}, {3, 6}};
  for (size_t i = 0; i < peer_count.size(); ++i) {
    EXPECT_EQ(r1[i + 1].at("peer"), peer_count[i].first) << i;
    EXPECT_EQ(r1[i + 1].at("count"), peer_count[i].second) << i;
    EXPECT_EQ(r1[i + 1].at("comm"), "world");
    EXPECT_EQ(r1[i + 1].at("dtype"), "float32");
  }
  // Every op of both repetitions on every rank: order, and sends matching receives.
  for (int step = 0; step < 4; ++step) {
    for (int op = 0; op < 2; ++op) {
      std::map<std::tuple<std::string, int, int>, int> sent;  // (comm, from, to) -> count
      std::map<std::tuple<std::string, int, int>, int> received;
      for (int r = 0; r < n; ++r) {
        const std::vector<Json> calls = at(plans[static_cast<size_t>(r)], step, op);
        ASSERT_GE(calls.size(), 2u);
        EXPECT_EQ(calls.front().at("op"), "group_start");
        EXPECT_EQ(calls.back().at("op"), "group_end");
        std::pair<int, int> last{-1, 0};  // (peer, 0 send / 1 recv), strictly increasing
        for (size_t i = 1; i + 1 < calls.size(); ++i) {
          const Json& c = calls[i];
          const bool send = c.at("op") == "send";
          const std::pair<int, int> now{c.at("peer").get<int>(), send ? 0 : 1};
          EXPECT_LT(last, now) << "step " << step << " op " << op << " rank " << r;
          last = now;
          EXPECT_GT(c.at("count").get<int>(), 0) << "empty parts are left out";
          // Ranks in ep are world rank % 2 (pairs {0,1}, {2,3}); in world, the world rank.
          const bool ep = c.at("comm") == "ep";
          const int me = ep ? r % 2 : r;
          const int base = ep ? r - r % 2 : 0;
          const auto key =
              std::make_tuple(c.at("comm").get<std::string>(), send ? me + base : now.first + base,
                              send ? now.first + base : me + base);
          (send ? sent : received)[key] = c.at("count").get<int>();
        }
      }
      EXPECT_EQ(sent, received) << "step " << step << " op " << op;
      EXPECT_FALSE(sent.empty());
    }
  }
}

// As ProcessGroupNCCL's coalescing (startCoalescing / endCoalescing): one group per coalesced
// op, its collectives in call order on its communicator, each with its own arguments.
TEST_F(RankPlan, CoalescedIsOneGroupOfItsCollectivesInCallOrder) {
  const Plan p = planOf("coalesced.json", 5, 8);
  ASSERT_EQ(p.exit_code, 0);
  EXPECT_TRUE(p.stop.is_null()) << p.stop.dump();
  const std::vector<Json> gathers = at(p, 0, 0);
  EXPECT_EQ(opsOf(gathers), (std::vector<std::string>{"group_start", "allgather", "allgather",
                                                      "broadcast", "group_end"}));
  EXPECT_EQ(gathers.at(1).at("comm"), "world");
  EXPECT_EQ(gathers.at(3).at("root"), 1);
  const std::vector<Json> bucket = at(p, 1, 0);
  ASSERT_EQ(opsOf(bucket), (std::vector<std::string>{"group_start", "allreduce", "allreduce",
                                                     "allreduce", "allreduce", "group_end"}));
  const std::vector<int> counts = {65536, 1024, 16384, 300};
  const std::vector<std::string> redops = {"sum", "sum", "avg", "max"};
  for (size_t i = 0; i < counts.size(); ++i) {
    EXPECT_EQ(bucket[i + 1].at("count"), counts[i]) << i;
    EXPECT_EQ(bucket[i + 1].at("redop"), redops[i]) << i;
    EXPECT_EQ(bucket[i + 1].at("comm"), "dp") << i;
  }
  EXPECT_EQ(bucket[1].at("dtype"), "bfloat16");
  EXPECT_EQ(bucket[2].at("dtype"), "float32");
  EXPECT_EQ(opsOf(at(p, 5, 1)),
            (std::vector<std::string>{"group_start", "reducescatter", "reducescatter", "allgather",
                                      "group_end"}));
}

// skip leaves the whole group out, extra_op repeats it, a wrong_* changes its first collective
// only, hang issues it and the rest of its step, then the stream never drains.
TEST_F(RankPlan, FaultsOnACoalescedOp) {
  const std::string file =
      ::testing::TempDir() + "ncclscope-plan-coalesced-" + std::to_string(getpid()) + ".json";
  {
    std::ofstream out(file);
    out << R"({"min_ranks": 2, "communicators": [{"name": "dp", "split": {"by": "block",
        "size": 4}}], "steps": [{"ops": [
          {"op": "coalesced", "comm": "dp", "ops": [{"op": "allreduce", "count": 64},
                                                   {"op": "allreduce", "count": 8}]},
          {"op": "allgather", "count": 4}]}],
        "repeat": 2,
        "faults": [{"kind": "skip", "ranks": [1], "step": 0, "op": 0},
                   {"kind": "wrong_count", "ranks": [2], "step": 0, "op": 0, "count": 7},
                   {"kind": "extra_op", "ranks": [3], "step": 1, "op": 0},
                   {"kind": "hang", "ranks": [0], "step": 1, "op": 0}]})";
  }
  const Plan skipped = planOf(file, 1, 4);
  const Plan wrong = planOf(file, 2, 4);
  const Plan extra = planOf(file, 3, 4);
  const Plan hung = planOf(file, 0, 4);
  std::remove(file.c_str());
  ASSERT_EQ(skipped.exit_code, 0);
  EXPECT_TRUE(at(skipped, 0, 0).empty());
  EXPECT_EQ(at(skipped, 0, 1).size(), 1u) << "the next op is issued";
  EXPECT_EQ(at(skipped, 1, 0).size(), 4u) << "the group of the next step is issued";

  const std::vector<Json> changed = at(wrong, 0, 0);
  ASSERT_EQ(changed.size(), 4u);
  EXPECT_EQ(changed[1].at("count"), 7) << "the first collective";
  EXPECT_EQ(changed[2].at("count"), 8) << "the others as written";

  const std::vector<Json> twice = at(extra, 1, 0);
  ASSERT_EQ(twice.size(), 8u);
  EXPECT_EQ(std::vector<Json>(twice.begin(), twice.begin() + 4),
            std::vector<Json>(twice.begin() + 4, twice.end()));

  ASSERT_FALSE(hung.stop.is_null());
  EXPECT_EQ(hung.stop.at("step"), 1);
  EXPECT_EQ(opsOf(at(hung, 1, 0)),
            (std::vector<std::string>{"group_start", "allreduce", "allreduce", "group_end"}));
  EXPECT_EQ(at(hung, 1, 1).size(), 1u) << "ops after it are enqueued too";
}

TEST_F(RankPlan, SkipLeavesTheOpOut) {
  EXPECT_TRUE(at(planOf("skip.json", 3, 4), 2, 0).empty());
  EXPECT_EQ(at(planOf("skip.json", 2, 4), 2, 0).size(), 1u);
}

TEST_F(RankPlan, ExtraOpIssuesACopyRightAfter) {
  const auto calls = at(planOf("extra-op.json", 1, 4), 2, 0);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], calls[1]);
}

TEST_F(RankPlan, WrongArgumentsShowInTheCall) {
  EXPECT_EQ(at(planOf("wrong-count.json", 0, 4), 3, 0).at(0).at("count"), 512);
  EXPECT_EQ(at(planOf("wrong-count.json", 1, 4), 3, 0).at(0).at("count"), 256);
  EXPECT_EQ(at(planOf("wrong-dtype.json", 2, 4), 3, 0).at(0).at("dtype"), "float16");
  EXPECT_EQ(at(planOf("wrong-root.json", 2, 4), 3, 1).at(0).at("root"), 1);
  EXPECT_EQ(at(planOf("wrong-root.json", 3, 4), 3, 1).at(0).at("root"), 0);
  // Stage 0 of the world pipeline sends to 1; shifted by one it sends to 2.
  const auto sends = at(planOf("wrong-peer.json", 0, 4), 2, 1);
  ASSERT_EQ(opsOf(sends), (std::vector<std::string>{"group_start", "send", "group_end"}));
  EXPECT_EQ(sends[1].at("peer"), 2);
}

TEST_F(RankPlan, CrashEndsThePlanWhereTheRankDies) {
  const Plan dead = planOf("crash-sigkill.json", 1, 4);
  EXPECT_EQ(dead.exit_code, 0) << "the plan itself succeeded";
  ASSERT_FALSE(dead.stop.is_null());
  EXPECT_EQ(dead.stop.at("step"), 2);
  EXPECT_NE(dead.stop.at("why").get<std::string>().find("sigkill"), std::string::npos);
  EXPECT_EQ(dead.calls.back().at("step"), 1);
  const Plan alive = planOf("crash-sigkill.json", 0, 4);
  EXPECT_TRUE(alive.stop.is_null());
  EXPECT_EQ(alive.calls.back().at("op"), "comm_destroy");
}

TEST_F(RankPlan, HangIssuesTheRestOfItsStepThenStops) {
  const Plan p = planOf("hang.json", 1, 4);
  ASSERT_FALSE(p.stop.is_null());
  EXPECT_EQ(p.stop.at("step"), 2);
  EXPECT_EQ(at(p, 2, 0).size(), 1u) << "the hung op is issued";
  EXPECT_FALSE(at(p, 2, 1).empty()) << "ops after it are enqueued too";
  EXPECT_EQ(p.calls.back().at("step"), 2);
}

// Its sends of step 2 never arrive, so the step's synchronize never returns; a rank whose link
// is fine has a plan of its own to the end.
TEST_F(RankPlan, HungLinkIssuesItsStepThenStops) {
  const Plan p = planOf("hung-link.json", 1, 4);
  ASSERT_FALSE(p.stop.is_null());
  EXPECT_EQ(p.stop.at("step"), 2);
  EXPECT_NE(p.stop.at("why").get<std::string>().find("links are hung"), std::string::npos);
  EXPECT_EQ(at(p, 2, 0).size(), 1u);
  EXPECT_FALSE(at(p, 2, 1).empty());
  EXPECT_EQ(p.calls.back().at("step"), 2);
  EXPECT_TRUE(planOf("hung-link.json", 0, 4).stop.is_null());
}

TEST_F(RankPlan, NeverJoinStopsBeforeTheCreation) {
  const Plan p = planOf("never-join.json", 1, 4);
  ASSERT_FALSE(p.stop.is_null());
  EXPECT_EQ(p.calls.back().at("op"), "comm_split");
  EXPECT_EQ(p.calls.back().at("new_comm"), "tp");
  EXPECT_EQ(p.stop.at("step"), -1);
}

TEST_F(RankPlan, ProcessFaultsStopThePlan) {
  for (const char* f : {"stuck-before.json", "early-exit.json", "freeze.json"}) {
    SCOPED_TRACE(f);
    const Plan p = planOf(f, 2, 4);
    const Plan q = planOf(f, 3, 4);
    EXPECT_NE(p.stop.is_null(), q.stop.is_null()) << "exactly one of ranks 2 and 3 is faulty";
  }
}

}  // namespace
}  // namespace ncclscope::sim
