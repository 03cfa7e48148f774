// The decision file the node's deciding watchdog publishes for the others: what it says for each
// stage of an analysis, that it reads back as written, and that damaged or hostile text is refused
// whole (nothing acts on part of a decision).
#include "plugin/watchdog_decision.h"

#include <gtest/gtest.h>

#include <string>

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

hd::Verdict Hang(hd::VerdictClass cls, uint64_t comm, bool confirmed) {
  hd::Verdict v;
  v.cls = cls;
  v.comm_id = comm;
  v.op = "allreduce";
  v.seq = 7;
  v.culprits = {2};
  v.confirmed = confirmed;
  return v;
}

Decision Sample() {
  Decision d;
  d.job = JobKey("1234.0");
  d.holder_pid = 4242;
  d.holder_rank = 3;
  d.written_wall_ns = 1'800'000'000'000'000'000;
  d.onset_wall_ns = 1'799'999'990'000'000'000;
  d.passes = 4;
  d.stage = DecisionStage::kHang;
  d.incident = 0xfeedfacecafebeefULL;
  d.hang_comms = {0xaaULL};
  d.waits = {{0xbbULL, {0, 1, 3}}, {0xccULL, {5}}};
  return d;
}

TEST(WatchdogDecision, ReadsBackAsWritten) {
  const Decision d = Sample();
  Decision back;
  std::string error;
  ASSERT_TRUE(ParseDecision(RenderDecision(d), &back, &error)) << error;
  EXPECT_EQ(back, d);
  Decision none;
  none.job = 1;
  none.holder_pid = 1;  // an unknown rank is -1
  ASSERT_TRUE(ParseDecision(RenderDecision(none), &back, &error)) << error;
  EXPECT_EQ(back, none);
}

TEST(WatchdogDecision, EachRankAbortsTheHangsAndWhereItWaits) {
  const Decision d = Sample();
  EXPECT_EQ(CommsToAbort(d, 1), (std::vector<uint64_t>{0xaa, 0xbb}));
  EXPECT_EQ(CommsToAbort(d, 5), (std::vector<uint64_t>{0xaa, 0xcc}));
  EXPECT_EQ(CommsToAbort(d, 6), (std::vector<uint64_t>{0xaa}));
  Decision suspect = d;
  suspect.stage = DecisionStage::kSuspect;
  EXPECT_TRUE(CommsToAbort(suspect, 1).empty());
}

TEST(WatchdogDecision, FollowsTheAnalysisHeadline) {
  hd::Analysis a;
  a.verdicts = {Hang(hd::VerdictClass::kMissing, 0x11, false)};
  hd::WaitingOn w;
  w.comm_id = 0x11;
  w.issued = {0, 1, 3};
  a.waiting = {w};
  Decision d = DecisionFromAnalysis(a);
  EXPECT_EQ(d.stage, DecisionStage::kSuspect);
  EXPECT_TRUE(d.waits.empty()) << "a suspect names nothing to abort";
  EXPECT_NE(d.incident, 0u);

  a.verdicts = {Hang(hd::VerdictClass::kMissing, 0x11, true),
                Hang(hd::VerdictClass::kDead, 0, true),  // a process verdict: no communicator
                Hang(hd::VerdictClass::kMissing, 0x22, false)};
  d = DecisionFromAnalysis(a);
  EXPECT_EQ(d.stage, DecisionStage::kHang);
  EXPECT_EQ(d.hang_comms, std::vector<uint64_t>{0x11});
  ASSERT_EQ(d.waits.size(), 1u);
  EXPECT_EQ(d.waits[0].ranks, (std::vector<int>{0, 1, 3}));

  a.verdicts = {hd::Verdict{}};  // healthy
  EXPECT_EQ(DecisionFromAnalysis(a).stage, DecisionStage::kNone);
  a.usable = false;
  EXPECT_EQ(DecisionFromAnalysis(a).stage, DecisionStage::kNone);
}

// Numerics verdicts (a NaN's origin, a corrupt output) leave the job running: nothing to abort,
// and no suspect either, even with a confirmed-looking flag set.
TEST(WatchdogDecision, NumericsVerdictsAreNeverAHang) {
  hd::Analysis a;
  a.verdicts = {Hang(hd::VerdictClass::kCorruptOutput, 0x11, true),
                Hang(hd::VerdictClass::kNanOrigin, 0x22, true)};
  EXPECT_EQ(DecisionFromAnalysis(a).stage, DecisionStage::kNone);
  // Behind a hang (the correlator's order) they change nothing of its decision.
  a.verdicts.insert(a.verdicts.begin(), Hang(hd::VerdictClass::kMissing, 0x33, true));
  const Decision d = DecisionFromAnalysis(a);
  EXPECT_EQ(d.stage, DecisionStage::kHang);
  EXPECT_EQ(d.hang_comms, std::vector<uint64_t>{0x33});
}

TEST(WatchdogDecision, RefusesDamagedText) {
  const std::string good = RenderDecision(Sample());
  auto refused = [](const std::string& text) {
    Decision d;
    std::string error;
    const bool ok = ParseDecision(text, &d, &error);
    if (!ok) {
      EXPECT_NE(error.find("line"), std::string::npos) << error;
    }
    return !ok && !error.empty();
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(refused("garbage\n"));
  EXPECT_TRUE(refused(good.substr(0, good.size() - 4)));    // cut inside "end"
  EXPECT_TRUE(refused(good.substr(0, good.find("wait"))));  // cut before the end line
  EXPECT_TRUE(refused(good + "x\n"));                       // text after the end
  EXPECT_TRUE(refused(replaced("stage hang", "stage maybe")));
  EXPECT_TRUE(refused(replaced("stage hang", "stage suspect")));  // lists comms, acts on none
  EXPECT_TRUE(refused(replaced("holder 4242", "holder -4242")));
  EXPECT_TRUE(refused(replaced("holder 4242", "holder 0")));
  EXPECT_TRUE(refused(replaced("holder 4242 3", "holder 4242 99999999")));
  EXPECT_TRUE(refused(replaced("passes 4", "passes 99999999999999999999")));
  EXPECT_TRUE(refused(replaced("written ", "written 9")));  // past INT64_MAX
  EXPECT_TRUE(refused(replaced("hang-comm 00000000000000aa", "hang-comm 00000000000000AA")));
  EXPECT_TRUE(refused(replaced("hang-comm 00000000000000aa", "hang-comm aa")));
  EXPECT_TRUE(refused(replaced(" 0,1,3", " 0,,3")));
  EXPECT_TRUE(refused(replaced(" 0,1,3", " 0,1,3,")));
  EXPECT_TRUE(refused(replaced(" 0,1,3", "")));
  EXPECT_TRUE(refused(replaced("incident ", "incident  ")));
  EXPECT_TRUE(refused(replaced("\nonset", "\nonset 1\nonset")));  // a header line twice
  EXPECT_TRUE(refused(replaced("\n", "\r\n")));
  std::string many = good.substr(0, good.find("end\n"));
  for (size_t i = 0; i <= kMaxDecisionEntries; ++i) many += "hang-comm 0000000000000001\n";
  EXPECT_TRUE(refused(many + "end\n"));
}

TEST(WatchdogDecision, AFollowerActsOnlyOnAConfirmedHangThatSawItsWait) {
  const Decision d = Sample();
  const int64_t onset = d.written_wall_ns - 1;
  std::vector<uint64_t> comms;
  std::string error;
  EXPECT_EQ(FollowDecisionText(RenderDecision(d), d.job, onset, 5, &comms, &error), Follow::kAct);
  EXPECT_EQ(comms, (std::vector<uint64_t>{0xaa, 0xcc}));
  // Looked at before this rank's wait began: an earlier incident, or it did not see this wait.
  comms.clear();
  EXPECT_EQ(FollowDecisionText(RenderDecision(d), d.job, d.written_wall_ns + 1, 5, &comms, &error),
            Follow::kWait);
  Decision suspect = d;
  suspect.stage = DecisionStage::kSuspect;
  suspect.hang_comms.clear();
  suspect.waits.clear();
  EXPECT_EQ(FollowDecisionText(RenderDecision(suspect), d.job, onset, 5, &comms, &error),
            Follow::kWait);
  EXPECT_TRUE(comms.empty());
  // Another job's decision, or a damaged one, is ignored whole, with a reason for the warning.
  EXPECT_EQ(FollowDecisionText(RenderDecision(d), JobKey("other"), onset, 5, &comms, &error),
            Follow::kIgnored);
  EXPECT_EQ(error, "a decision of another job");
  std::string damaged = RenderDecision(d);
  damaged.resize(damaged.size() / 2);
  EXPECT_EQ(FollowDecisionText(damaged, d.job, onset, 5, &comms, &error), Follow::kIgnored);
  EXPECT_FALSE(error.empty());
  EXPECT_TRUE(comms.empty());
}

TEST(WatchdogDecision, FileNamesAreTheJobs) {
  EXPECT_NE(JobKey("1234.0"), JobKey("1234.1"));
  EXPECT_EQ(NodeLockPath("/t", 0xabc), "/t/.watchdog-0000000000000abc.lock");
  EXPECT_EQ(DecisionName(0xabc), ".watchdog-0000000000000abc.decision");
}

}  // namespace
}  // namespace ncclscope::plugin
