// The job's incident record (hang_detector/incident/incident_record.h): what it says for each
// stage, that it reads back as written, and that damaged or hostile text is refused whole (no rank
// acts on part of a record).
#include "hang_detector/incident/incident_record.h"

#include <gtest/gtest.h>

#include <string>

#include "hang_detector/incident/incident_key.h"

namespace ncclscope::hang_detector {
namespace {

IncidentRecord Sample() {
  IncidentRecord r;
  r.job_id = "1234.0";
  r.restart = 1;
  r.job = JobKey(r.job_id, r.restart);
  r.abort_mode = true;
  r.holder_pid = 4242;
  r.holder_rank = 3;
  r.written_wall_ns = 1'800'000'000'000'000'000;
  r.passes = 4;
  r.stage = IncidentStage::kHang;
  r.incident = 0xfeedfacecafebeefULL;
  r.cls = "missing";
  r.comm_id = 0xaa;
  r.comm_name = "dp group %1 ";  // any bytes a program names a communicator with
  r.op = "allreduce";
  r.seq = 6;
  r.culprits = {1};
  r.onset_wall_ns = 1'799'999'990'000'000'000;
  r.how = ConfirmedHow::kTime;
  r.confirmed_wall_ns = 1'799'999'995'000'000'000;
  r.why = "waited 5.1 s, past 5.0 s (the floor; the longest pause this job has shown is 0.1 s)";
  r.hang_comms = {0xaaULL};
  r.waits = {{0xaaULL, {0, 2, 3}}, {0xccULL, {5}}};
  return r;
}

TEST(IncidentRecord, ReadsBackAsWritten) {
  const IncidentRecord r = Sample();
  IncidentRecord back;
  std::string error;
  ASSERT_TRUE(ParseIncident(RenderIncident(r), &back, &error)) << error;
  EXPECT_EQ(back, r);
  IncidentRecord none;
  none.job_id = "local";
  none.job = JobKey("local");
  none.holder_pid = 1;  // an unknown rank is -1
  ASSERT_TRUE(ParseIncident(RenderIncident(none), &back, &error)) << error;
  EXPECT_EQ(back, none);
  IncidentRecord dash = none;
  dash.why = "-";  // the text "-" is not the absence of text
  ASSERT_TRUE(ParseIncident(RenderIncident(dash), &back, &error)) << error;
  EXPECT_EQ(back.why, "-");
}

TEST(IncidentRecord, EachRankAbortsTheHangsAndWhereItWaits) {
  const IncidentRecord r = Sample();
  EXPECT_EQ(CommsToAbort(r, 2), (std::vector<uint64_t>{0xaa}));
  EXPECT_EQ(CommsToAbort(r, 5), (std::vector<uint64_t>{0xaa, 0xcc}));
  IncidentRecord suspect = r;
  suspect.stage = IncidentStage::kSuspect;
  EXPECT_TRUE(CommsToAbort(suspect, 2).empty()) << "nothing acts on a suspect";
}

TEST(IncidentRecord, DamagedOrHostileTextIsRefusedWhole) {
  const std::string good = RenderIncident(Sample());
  std::string error;
  IncidentRecord out;
  const auto refused = [&](const std::string& text, const char* what) {
    error.clear();
    EXPECT_FALSE(ParseIncident(text, &out, &error)) << what;
    EXPECT_FALSE(error.empty()) << what;
  };
  // The good record with one piece of text replaced.
  const auto edited = [&good](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  refused(good.substr(0, good.size() - 1), "truncated");
  refused(edited("ncclscope-incident 1", "ncclscope-watchdog-decision 1"), "another format");
  refused(edited("1234.0", "1234.9"), "a job id that does not match its key");
  refused(edited("1234.0", "../x/y"), "a job id with a path in it");
  refused(edited("stage hang", "stage suspect"), "a suspect listing communicators to abort");
  refused(edited(" time\n", " none\n"), "a hang without how it was confirmed");
  refused(edited("wait 00000000000000cc 5", "wait 00000000000000cc 99999999999"),
          "a rank beyond any job");
  refused(good + "wait 00000000000000aa 1\n", "text after end");
  refused(edited("comm-name ", "comm-name %Z"), "a bad escape");
}

}  // namespace
}  // namespace ncclscope::hang_detector
