// The incident lifecycle every reader shares (hang_detector/incident/incident_lifecycle.h): a
// confirmed incident is written once and never judged again; an abort is never progress; report
// mode may resolve a hang confirmed by time, and says so.
#include "hang_detector/incident/incident_lifecycle.h"

#include <gtest/gtest.h>

#include "hang_detector/incident/incident_key.h"

namespace ncclscope::hang_detector {
namespace {

constexpr int64_t kNow = 1'800'000'000'000'000'000;

Verdict Missing(uint64_t comm, uint64_t seq, bool confirmed, double since_s) {
  Verdict v;
  v.cls = VerdictClass::kMissing;
  v.comm_id = comm;
  v.comm_name = "dp";
  v.op = "allreduce";
  v.seq = seq;
  v.culprits = {1};
  v.victims = {0, 2, 3};
  v.since_s = since_s;
  v.confirmed = confirmed;
  v.confirmed_by_time = confirmed;
  v.confirmed_by =
      confirmed ? "waited 5.1 s, past 5.0 s (the floor)" : "a suspect: confirmed at 15 s";
  return v;
}

Analysis With(std::vector<Verdict> verdicts) {
  Analysis a;
  a.verdicts = std::move(verdicts);
  WaitingOn w;
  w.comm_id = 0xd;
  w.issued = {0, 2, 3};
  a.waiting.push_back(w);
  return a;
}

Analysis Healthy() {
  Analysis a;
  a.verdicts.push_back({});
  return a;
}

TEST(IncidentLifecycle, ASuspectIsConfirmedOnceWithItsIdentityAndOnset) {
  IncidentRecord r;
  IncidentStep s = Advance(r, With({Missing(0xd, 6, false, 4)}), kNow);
  EXPECT_EQ(s.event, IncidentEvent::kSuspected);
  EXPECT_EQ(s.next.stage, IncidentStage::kSuspect);
  EXPECT_EQ(s.next.onset_wall_ns, kNow - 4'000'000'000);
  EXPECT_TRUE(s.next.waits.empty()) << "nothing to abort for a suspect";
  s = Advance(s.next, With({Missing(0xd, 6, true, 6)}), kNow + 2'000'000'000);
  EXPECT_EQ(s.event, IncidentEvent::kConfirmed);
  EXPECT_EQ(s.next.how, ConfirmedHow::kTime);
  EXPECT_EQ(s.next.onset_wall_ns, kNow - 4'000'000'000) << "the onset is the incident's";
  EXPECT_EQ(s.next.incident, IncidentKey(Missing(0xd, 6, true, 6)));
  EXPECT_EQ(s.next.hang_comms, std::vector<uint64_t>{0xd});
  ASSERT_EQ(s.next.waits.size(), 1u);
  EXPECT_EQ(s.next.waits[0].ranks, (std::vector<int>{0, 2, 3}));
}

// The defect this module was made for: a look after the first rank aborted sees the aborted wait
// as a long pause, a threshold three times higher, and a suspect again. The record keeps the hang.
TEST(IncidentLifecycle, AConfirmedHangIsNeverJudgedAgain) {
  IncidentRecord r = Advance({}, With({Missing(0xd, 6, true, 6)}), kNow).next;
  r.abort_mode = true;
  Analysis later = With({Missing(0xd, 6, false, 20)});
  later.waiting[0].issued = {2, 3};  // rank 0 aborted and left; the others still wait
  const IncidentStep s = Advance(r, later, kNow + 10'000'000'000);
  EXPECT_EQ(s.event, IncidentEvent::kNothing);
  EXPECT_EQ(s.next.stage, IncidentStage::kHang);
  EXPECT_EQ(s.next.confirmed_wall_ns, r.confirmed_wall_ns) << "written once";
  EXPECT_EQ(s.next.waits[0].ranks, (std::vector<int>{0, 2, 3})) << "an aborted rank stays listed";
  // What every reader shows of that look: the hang, confirmed, with the recorded words.
  ApplyIncident(s.next, kNow + 10'000'000'000, &later);
  EXPECT_TRUE(later.verdicts[0].confirmed);
  EXPECT_NE(later.verdicts[0].confirmed_by.find("waited 5.1 s"), std::string::npos);
  EXPECT_EQ(ExitCode(later), 2);
  EXPECT_EQ(later.incident.stage, "hang");
}

TEST(IncidentLifecycle, InAbortModeAHangNeverResolves) {
  IncidentRecord r = Advance({}, With({Missing(0xd, 6, true, 6)}), kNow).next;
  r.abort_mode = true;
  EXPECT_EQ(Advance(r, Healthy(), kNow + 1).next.stage, IncidentStage::kHang);
  EXPECT_EQ(OnLocalProgress(r, /*aborted_here=*/false, kNow + 1).next.stage, IncidentStage::kHang);
}

TEST(IncidentLifecycle, AnAbortedWaitIsNoProgress) {
  IncidentRecord r = Advance({}, With({Missing(0xd, 6, false, 4)}), kNow).next;
  EXPECT_EQ(OnLocalProgress(r, /*aborted_here=*/true, kNow + 1).event, IncidentEvent::kNothing);
  EXPECT_EQ(OnLocalProgress(r, /*aborted_here=*/false, kNow + 1).event, IncidentEvent::kResolved);
}

TEST(IncidentLifecycle, InReportModeAHangConfirmedByTimeThatProgressesResolvesAndSaysSo) {
  const IncidentRecord r = Advance({}, With({Missing(0xd, 6, true, 6)}), kNow).next;
  const IncidentStep s = Advance(r, Healthy(), kNow + 3'000'000'000);
  EXPECT_EQ(s.event, IncidentEvent::kResolved);
  EXPECT_EQ(Resolution(s.next), "confirmed by time, then progressed");
  EXPECT_TRUE(s.next.waits.empty() && s.next.hang_comms.empty()) << "nothing left to abort";
  // The next pause is a new incident.
  EXPECT_EQ(Advance(s.next, With({Missing(0xd, 9, false, 3)}), kNow + 9).event,
            IncidentEvent::kSuspected);
  IncidentRecord suspect = Advance({}, With({Missing(0xd, 6, false, 4)}), kNow).next;
  EXPECT_EQ(Resolution(Advance(suspect, Healthy(), kNow + 1).next), "a suspect that progressed");
}

TEST(IncidentLifecycle, NothingReadableSaysNothingAboutTheJob) {
  const IncidentRecord r = Advance({}, With({Missing(0xd, 6, false, 4)}), kNow).next;
  Analysis unusable;
  unusable.usable = false;
  EXPECT_EQ(Advance(r, unusable, kNow + 1).next.stage, IncidentStage::kSuspect);
}

TEST(IncidentLifecycle, ARecordOfAnEarlierRunIsNotThisRunsIncident) {
  IncidentRecord r;
  r.job_id = "local";
  r.job = JobKey("local");
  r.written_wall_ns = kNow;
  EXPECT_TRUE(OfThisRun(r, JobKey("local"), kNow - 1));
  EXPECT_FALSE(OfThisRun(r, JobKey("local"), kNow + 1)) << "written before this run began";
  EXPECT_FALSE(OfThisRun(r, JobKey("local", 1), kNow - 1)) << "torchrun restarted the job";
  EXPECT_NE(JobKey("local", 1), JobKey("local"));
}

}  // namespace
}  // namespace ncclscope::hang_detector
