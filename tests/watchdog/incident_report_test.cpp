// What the watchdog prints for each stage of an incident: short, naming the verdict file, and the
// end of an incident says how it ended.
#include "plugin/watchdog/incident_report.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

hd::Verdict Missing() {
  hd::Verdict v;
  v.cls = hd::VerdictClass::kMissing;
  v.comm_id = 0xd;
  v.comm_name = "dp";
  v.op = "allreduce";
  v.seq = 2;
  v.culprits = {2};
  v.summary = "rank 2 never issued it";
  return v;
}

TEST(IncidentReport, StderrBlockIsShortAndNamesTheFile) {
  hd::Analysis a;
  hd::Verdict v = Missing();
  for (int r = 0; r < 8; ++r) v.evidence.push_back({r, 0, true, "waiting"});
  a.verdicts.push_back(v);
  const std::string block = VerdictBlock(a, "/d/verdict.json", 0, 42);
  EXPECT_NE(block.find("rank 2 never issued it"), std::string::npos);
  EXPECT_NE(block.find("(4 more)"), std::string::npos);
  EXPECT_NE(block.find("/d/verdict.json"), std::string::npos);
  EXPECT_NE(block.find("pid 42"), std::string::npos);
}

TEST(IncidentReport, ASuspectIsOneLineSayingWhatWouldConfirmIt) {
  hd::Analysis a;
  hd::Verdict v = Missing();
  v.confirmed_by = "a suspect: confirmed at 60 s (the floor)";
  a.verdicts.push_back(v);
  const std::string line = SuspectLine(a, "/d/verdict.json", 3, 7);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
  EXPECT_NE(line.find("SUSPECT"), std::string::npos) << line;
  EXPECT_NE(line.find("confirmed at 60 s"), std::string::npos);
}

TEST(IncidentReport, TheEndOfAnIncidentSaysHowItWasConfirmed) {
  hd::IncidentRecord r;
  r.stage = hd::IncidentStage::kResolved;
  r.how = hd::ConfirmedHow::kTime;
  r.cls = "missing";
  r.comm_name = "dp";
  r.op = "allreduce";
  r.seq = 2;
  const std::string line = ResolvedLine(r, 70.25, "/d/verdict.json", 0, 42);
  EXPECT_NE(line.find(": resolved: dp allreduce #2 progressed after 70.2 s (confirmed by time, "
                      "then progressed); /d/verdict.json says so"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace ncclscope::plugin
