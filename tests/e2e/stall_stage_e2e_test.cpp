// Where a device stall is stuck, end to end: emulated jobs with the profiler plugin and its proxy
// detail always on (NCCLSCOPE_PROFILER_PROXY=always, so the stuck operation itself carries
// ProxyOp/ProxyStep events), killed by the launcher, then `ncclscope analyze` as a user reads it.
//
// What the design guarantees, whatever the machine's load: an operation stuck for seconds stays
// in flight across the probe's background ticks, so its proxy_progress records are written; a
// hung link's sends are never taken, so they wait on the network (SendWait) while the partner's
// receives wait for data (RecvWait); a blocked stream never starts its kernel, while NCCL's proxy
// (and the emulator's, since it takes operations at launch) has already posted its steps. Which
// of the two channels a verdict names depends on which record the analysis meets first: both are
// stuck, so any of them is right, and the text must name the one the JSON names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/stall_stage_verdicts.h"

namespace ncclscope::testing {
namespace {

const std::map<std::string, std::string> kProxyAlways = {{"NCCLSCOPE_PROFILER_PROXY", "always"}};
// The faults strike at step 2; the launcher kills the hung job after kKillAfterS.

struct JsonAndText {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json
                      // members
  nlohmann::json json;
  std::string text;
  int json_exit = -1;
  int text_exit = -1;
};

JsonAndText AnalyzeBoth(const std::string& dir) {
  JsonAndText a;
  const ProcessResult j = RunProcess({Cli(), "analyze", dir, "--json"}, {}, 120);
  a.json_exit = j.exit_code;
  a.json = nlohmann::json::parse(j.out, nullptr, false);
  EXPECT_FALSE(a.json.is_discarded()) << j.out << j.err;
  const ProcessResult t = RunProcess({Cli(), "analyze", dir}, {}, 120);
  a.text_exit = t.exit_code;
  a.text = t.out;
  return a;
}

// The text's headline of a verdict is its JSON headline, printed first.
void ExpectTextShowsHeadline(const JsonAndText& a, const nlohmann::json& v) {
  EXPECT_NE(a.text.find(v["headline"].get<std::string>()), std::string::npos) << a.text;
}

TEST(StallStage, HungLinkIsTheNetworkBetweenItsRankAndPeer) {
  ScratchDir dir;
  const ProcessResult sim = RunSim("hung-link.json", 8, dir / "trace", kKillAfterS, kProxyAlways);
  EXPECT_NE(sim.exit_code, 0) << "a job whose link hung cannot finish";
  EXPECT_NE(sim.err.find("injecting hung_link at step 2"), std::string::npos) << sim.err;
  const JsonAndText a = AnalyzeBoth(dir / "trace");
  SCOPED_TRACE(a.json.dump(2));
  EXPECT_EQ(a.json_exit, 2);
  EXPECT_EQ(a.text_exit, 2);
  ASSERT_FALSE(a.json["verdicts"].empty());

  // Rank 1's link died before step 2: the tp allreduce of step 2 (tp #3) with its partner 0, and
  // its pipeline send of that step (dp #2, to rank 3), stuck on the same dead port. Which of the
  // two waits began first, and so leads, is a matter of microseconds; both are named.
  const nlohmann::json& lead = a.json["verdicts"][0];
  EXPECT_EQ(lead["stall"]["stage"], "network");
  EXPECT_EQ(lead["stall"]["rank"], 1);
  const nlohmann::json* tp = VerdictOf(a.json, "tp", "allreduce", 3);
  ASSERT_NE(tp, nullptr);
  const nlohmann::json& v = *tp;
  EXPECT_EQ(v["class"], "device-stall");
  EXPECT_EQ(v["tie"], false);
  EXPECT_EQ(v["culprits"], nlohmann::json::array({0, 1}));  // the two ends of the link
  const nlohmann::json& s = v["stall"];
  EXPECT_EQ(s["stage"], "network");
  EXPECT_EQ(s["rank"], 1);
  EXPECT_EQ(s["peer"], 0);
  EXPECT_EQ(s["side"], "send");
  const int channel = s["channel"].get<int>();
  EXPECT_TRUE(channel >= 0 && channel < kChannels) << channel;
  const std::string summary = v["summary"];
  EXPECT_NE(summary.find("rank 1's send to rank 0 on channel " + std::to_string(channel)),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("the link 1 -> 0 is stuck"), std::string::npos) << summary;
  const std::string site =
      "[stage network: rank 1 send peer 0 channel " + std::to_string(channel) + "]";
  EXPECT_NE(v["headline"].get<std::string>().find(site), std::string::npos) << v["headline"];
  ExpectTextShowsHeadline(a, v);

  const nlohmann::json* p2p = VerdictOf(a.json, "dp", "send", 2);
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ((*p2p)["class"], "device-stall");
  EXPECT_EQ((*p2p)["stall"]["stage"], "network");
  EXPECT_EQ((*p2p)["stall"]["rank"], 1);
  EXPECT_EQ((*p2p)["stall"]["peer"], 3);
  EXPECT_EQ((*p2p)["culprits"], nlohmann::json::array({1, 3}));
  ExpectTextShowsHeadline(a, *p2p);
}

// hang.json blocks rank 1's tp stream before the allreduce of step 2. The trace holds what NCCL
// 2.28.9 would show: rank 1's sends of tp #3 posted and waiting for their data from its GPU, its
// receives posted, and no device start of tp #3 on rank 1 (its partner's started).
TEST(StallStage, BlockedStreamHasPostedProxyStepsAndNoDeviceStart) {
  ScratchDir dir;
  const ProcessResult sim = RunSim("hang.json", 8, dir / "trace", kKillAfterS, kProxyAlways);
  EXPECT_NE(sim.exit_code, 0);
  const auto ranks = DumpJson(dir / "trace");
  ASSERT_EQ(ranks.size(), 8u);
  int send_waiting_for_gpu = 0, recv_posted = 0, started = 0;
  for (const nlohmann::json& r : ranks.at(1).profiler_records) {
    if (r.value("comm_name", "") != "tp" || r.value("seq", uint64_t{0}) != 3) continue;
    if (r["op"] == "device_start") ++started;
    if (r["op"] != "proxy_progress") continue;
    EXPECT_EQ(r["peer"], 0);
    if (r["side"] == "send" && r["state"] == "SendGPUWait") ++send_waiting_for_gpu;
    if (r["side"] == "recv" && r["state"] == "RecvWait") ++recv_posted;
  }
  EXPECT_EQ(started, 0);
  EXPECT_EQ(send_waiting_for_gpu, kChannels);
  EXPECT_EQ(recv_posted, kChannels);
  int partner_started = 0;
  for (const nlohmann::json& r : ranks.at(0).profiler_records) {
    partner_started += r["op"] == "device_start" && r.value("comm_name", "") == "tp" &&
                       r.value("seq", uint64_t{0}) == 3;
  }
  EXPECT_GT(partner_started, 0);
}

// The same job as analyze reads it: only the kernel start counts, so rank 1 never started.
TEST(StallStage, BlockedStreamIsNotStartedThoughItsProxyPostedSteps) {
  // The kernel may start, and its device_start be written, before the call returns and its record
  // is written (rank 1: device_start tp #2 at record 19, allgather tp #2 at record 20): that start
  // still counts, so rank 1 is not read as a silent proxy
  // (hang_detector/detectors/device_stall.cpp).
  ScratchDir dir;
  const ProcessResult sim = RunSim("hang.json", 8, dir / "trace", kKillAfterS, kProxyAlways);
  EXPECT_NE(sim.exit_code, 0);
  const JsonAndText a = AnalyzeBoth(dir / "trace");
  SCOPED_TRACE(a.json.dump(2));
  EXPECT_EQ(a.json_exit, 2);
  ASSERT_FALSE(a.json["verdicts"].empty());
  const nlohmann::json& v = a.json["verdicts"][0];
  EXPECT_EQ(v["class"], "device-stall");
  EXPECT_EQ(v["comm_name"], "tp");
  EXPECT_EQ(v["seq"], 3);
  EXPECT_EQ(v["culprits"], nlohmann::json::array({1}));
  EXPECT_EQ(v["victims"], nlohmann::json::array({0}));
  EXPECT_EQ(v["stall"]["stage"], "not-started");
  EXPECT_EQ(v["stall"]["rank"], 1);
  const std::string summary = v["summary"];
  EXPECT_NE(summary.find("never started on rank 1"), std::string::npos) << summary;
  EXPECT_NE(v["headline"].get<std::string>().find("[stage not-started: rank 1]"), std::string::npos)
      << v["headline"];
  ExpectTextShowsHeadline(a, v);
}

}  // namespace
}  // namespace ncclscope::testing
