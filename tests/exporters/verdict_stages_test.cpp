// The two stages as an SRE sees them on /metrics: every verdict series says its stage, a suspect
// says when it will be confirmed, and incidents are counted by how they ended, so a checkpoint
// pause that resolves is one resolved suspect, not a hang and not a lingering series. Synthetic
// analyses: the stage is the correlator's decision (hang_detector tests); this is its exposure.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "exporters/prometheus/node_aggregator.h"
#include "exporters/prometheus/verdict_poller.h"
#include "exporters/prometheus/verdict_stages.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"

namespace ncclscope::testing {
namespace {

using exporters::IncidentCounts;
using exporters::NodeAggregator;
using exporters::VerdictPoller;
using hang_detector::Analysis;
using hang_detector::Verdict;
using hang_detector::VerdictClass;

Verdict Missing(std::vector<int> culprits, double since_s, bool confirmed, double confirm_after_s) {
  Verdict v;
  v.cls = VerdictClass::kMissing;
  v.comm_id = 0x77;
  v.comm_name = "world";
  v.op = "allreduce";
  v.culprits = std::move(culprits);
  v.since_s = since_s;
  v.confirmed = confirmed;
  v.confirm_after_s = confirm_after_s;
  return v;
}

std::shared_ptr<const Analysis> With(std::vector<Verdict> verdicts) {
  auto a = std::make_shared<Analysis>();
  a->verdicts = std::move(verdicts);
  if (a->verdicts.empty()) a->verdicts.push_back(Verdict{});  // healthy: one kHealthy verdict
  return a;
}

std::shared_ptr<const Analysis> Healthy() {
  return With({});
}
std::shared_ptr<const Analysis> Suspect(double since_s) {
  return With({Missing({3}, since_s, false, 60)});
}
std::shared_ptr<const Analysis> Hang(double since_s) {
  return With({Missing({3}, since_s, true, 60)});
}

class VerdictStages : public ::testing::Test {
 protected:
  // What one scrape shows after the poller has seen `analyses`, in order.
  std::string ScrapeAfter(const std::vector<std::shared_ptr<const Analysis>>& analyses) {
    size_t next = 0;
    VerdictPoller poller([&] { return analyses[next++]; }, 3600);
    for (size_t i = 0; i < analyses.size(); ++i) poller.RunOnce();
    const exporters::VerdictSnapshot s = poller.Snapshot();
    return Scrape(aggregator, s.analysis.get(), 0, s.incidents);
  }

  SnapshotSource source;
  NodeAggregator aggregator{&source, {}};
};

constexpr char kSuspectResolved[] =
    R"(ncclscope_incidents_total{stage="suspect",outcome="resolved",scope="node"})";
constexpr char kHangConfirmed[] =
    R"(ncclscope_incidents_total{stage="hang",outcome="confirmed",scope="node"})";
constexpr char kHangResolved[] =
    R"(ncclscope_incidents_total{stage="hang",outcome="resolved",scope="node"})";

TEST_F(VerdictStages, ASuspectSaysSoAndWhenItWillBeConfirmed) {
  const std::string text = ScrapeAfter({Suspect(20)});
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict{class="missing",comm="world",rank="3",stage="suspect",scope="node"})"),
      1)
      << text;
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict_age_seconds{class="missing",comm="world",stage="suspect",scope="node"})"),
      20);
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict_confirm_after_seconds{class="missing",comm="world",stage="suspect",scope="node"})"),
      60);
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"stage", "hang"}}), 0) << "nothing to page on";
  EXPECT_EQ(Value(text, kSuspectResolved), 0) << "still open: not resolved yet";
  EXPECT_EQ(Value(text, kHangConfirmed), 0);
}

TEST_F(VerdictStages, AConfirmedHangIsStageHangWithoutAConfirmationTime) {
  const std::string text = ScrapeAfter({Hang(75)});
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict{class="missing",comm="world",rank="3",stage="hang",scope="node"})"),
      1)
      << text;
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict_age_seconds{class="missing",comm="world",stage="hang",scope="node"})"),
      75);
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"stage", "suspect"}}), 0);
  EXPECT_EQ(text.find("ncclscope_verdict_confirm_after_seconds{"), std::string::npos)
      << "only a suspect has a confirmation time\n"
      << text;
  EXPECT_EQ(Value(text, kHangConfirmed), 1);
}

TEST_F(VerdictStages, AStragglerIsItsOwnStage) {
  Verdict v;
  v.cls = VerdictClass::kStraggler;
  v.comm_name = "dp";
  v.culprits = {5};
  v.since_s = 300;
  const std::string text = ScrapeAfter({With({v})});
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict{class="straggler",comm="dp",rank="5",stage="straggler",scope="node"})"),
      1)
      << text;
  EXPECT_EQ(text.find("ncclscope_verdict_confirm_after_seconds{"), std::string::npos) << text;
  EXPECT_EQ(Value(text, kSuspectResolved), 0) << "a straggler is no hang incident";
  EXPECT_EQ(Value(text, kHangConfirmed), 0);
}

TEST_F(VerdictStages, IncidentCountersExistAtZeroBeforeAnyIncident) {
  const std::string text = ScrapeAfter({Healthy()});
  EXPECT_EQ(Value(text, kSuspectResolved), 0) << text;
  EXPECT_EQ(Value(text, kHangConfirmed), 0);
  EXPECT_EQ(Value(text, kHangResolved), 0);
  EXPECT_NE(text.find("# TYPE ncclscope_incidents_total counter"), std::string::npos);
}

// A checkpoint pause: a suspect for several correlator runs, then progress again. Its series goes
// away and it counts once as resolved, however many runs it lasted and however long after.
TEST_F(VerdictStages, ASuspectThatGoesAwayCountsOnceAsResolved) {
  const std::string text =
      ScrapeAfter({Healthy(), Suspect(2), Suspect(4), Suspect(6), Healthy(), Healthy()});
  EXPECT_EQ(Value(text, kSuspectResolved), 1) << text;
  EXPECT_EQ(Value(text, kHangConfirmed), 0);
  EXPECT_EQ(Sum(text, "ncclscope_verdict"), 0) << "a resolved suspect leaves no verdict series";
  EXPECT_EQ(text.find("ncclscope_verdict_confirm_after_seconds{"), std::string::npos);
}

TEST_F(VerdictStages, EachPauseIsItsOwnIncident) {
  const std::string text =
      ScrapeAfter({Suspect(3), Healthy(), Suspect(3), Suspect(5), Healthy(), Suspect(2)});
  EXPECT_EQ(Value(text, kSuspectResolved), 2) << "the third is still open\n" << text;
}

TEST_F(VerdictStages, ASuspectThatIsConfirmedIsAHangNotAResolvedSuspect) {
  const std::string text = ScrapeAfter({Suspect(30), Suspect(58), Hang(62), Hang(64), Healthy()});
  EXPECT_EQ(Value(text, kSuspectResolved), 0) << text;
  EXPECT_EQ(Value(text, kHangConfirmed), 1) << "counted once, not once per run";
  EXPECT_EQ(Value(text, kHangResolved), 1);
}

// The correlator's shape of one incident may change between runs (a headline merged, a suspect
// next to a confirmed verdict): still one incident, at the highest stage it reached.
TEST_F(VerdictStages, OneIncidentThroughChangingVerdicts) {
  Verdict other = Missing({6}, 5, false, 60);
  other.comm_name = "tp";
  const std::string text =
      ScrapeAfter({Hang(70), With({other, Missing({3}, 72, true, 60)}), With({other}), Healthy()});
  EXPECT_EQ(Value(text, kHangConfirmed), 1) << text;
  EXPECT_EQ(Value(text, kHangResolved), 1);
  EXPECT_EQ(Value(text, kSuspectResolved), 0) << "the incident had been confirmed";
}

// An empty or unreadable directory says nothing about the job: it ends no incident.
TEST_F(VerdictStages, NothingToAnalyseEndsNoIncident) {
  const std::string text = ScrapeAfter({Suspect(3), nullptr, Suspect(5)});
  EXPECT_EQ(Value(text, kSuspectResolved), 0) << text;
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"stage", "suspect"}}), 1);
}

// After the first rank of a hung job aborted (NCCLSCOPE_ON_HANG=abort), or a new decider's
// threshold grew, a look may read the same wait as a suspect again. The page must not resolve: the
// series stays stage="hang" and the incident is counted once.
TEST_F(VerdictStages, AConfirmedHangNeverStepsBackToSuspect) {
  const std::string text = ScrapeAfter({Suspect(4), Hang(6), Suspect(9), Suspect(12)});
  EXPECT_EQ(
      Value(
          text,
          R"(ncclscope_verdict{class="missing",comm="world",rank="3",stage="hang",scope="node"})"),
      1)
      << text;
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"stage", "suspect"}}), 0) << text;
  EXPECT_EQ(Value(text, kHangConfirmed), 1);
  EXPECT_EQ(Value(text, kSuspectResolved), 0);
}

// The job's watchdog recorded the hang in abort mode: it never resolves, even when a look finds
// nothing stuck any more (every waiting rank aborted and left).
TEST_F(VerdictStages, InAbortModeAConfirmedHangNeverResolves) {
  auto recorded = std::make_shared<Analysis>(*Hang(6));
  recorded->incident.key = "00000000000000aa";
  recorded->incident.stage = "hang";
  recorded->incident.abort_mode = true;
  const std::string text = ScrapeAfter({recorded, Healthy()});
  EXPECT_EQ(Value(text, kHangResolved), 0) << text;
  EXPECT_EQ(Value(text, kHangConfirmed), 1);
}

TEST(IncidentTracker, AResolvedSuspectThenAConfirmedHangAreTwoIncidents) {
  exporters::IncidentTracker t;
  t.Observe(Suspect(3), 0);
  t.Observe(Healthy(), 0);
  t.Observe(Hang(70), 0);
  const IncidentCounts& c = t.counts();
  EXPECT_EQ(c.suspect_resolved, 1u);
  EXPECT_EQ(c.hang_confirmed, 1u);
  EXPECT_EQ(c.hang_resolved, 0u);
}

}  // namespace
}  // namespace ncclscope::testing
