// `ncclscope report` (exporters/report/): the page of a hung job names the verdict and its
// culprit, draws the culprit's never-completed operation in the timeline, holds the cost tables
// and the job's facts, stays one self-contained file (no script, no external resource), and
// escapes whatever a ring file's names hold.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "exporters/report/html.h"
#include "exporters/report/report_builder.h"
#include "exporters/stats/cost_table.h"
#include "hang_detector/decision/correlator.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/trace/temp_dir.h"

namespace ncclscope::testing {
namespace {

namespace rp = exporters::report;
using trace::OpType;

// Rank 1 never calls world #3; ranks 0, 2 and 3 wait in it.
trace::TraceSet HungJob(const std::string& world_name = "world") {
  JobBuilder job(4);
  const uint64_t world = job.Comm(world_name, {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 0.2, Done::kCompleted);
    if (r != 1) job.Coll(r, world, OpType::kAllReduce, 0.3, Done::kPending);
  }
  job.HeartbeatAll(120.0);
  return job.Build();
}

class ReportTest : public ::testing::Test {
 protected:
  std::string Page(const trace::TraceSet& set) {
    source_.set = set;
    FakeProbe probe;
    hang_detector::AnalyzeOptions ao;
    ao.now_wall_ns = JobBuilder::Wall(120.0);
    ao.probe = &probe;
    analysis_ = hang_detector::Analyze(set, ao);
    std::string error;
    EXPECT_TRUE(exporters::BuildCostTable(source_, &costs_, &error)) << error;
    rp::ReportInputs in;
    in.dir = "/traces/job 7";
    in.version = "test";
    in.analysis = &analysis_;
    in.costs = &costs_;
    in.generated_ns = JobBuilder::Wall(121.0);
    const std::string path = dir_.path() + "/report.html";
    EXPECT_TRUE(rp::WriteReport(source_, in, path, &error)) << error;
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  }

  TempDir dir_;
  SnapshotSource source_;
  hang_detector::Analysis analysis_;
  exporters::CostTable costs_;
};

TEST_F(ReportTest, AHungJobsPageNamesTheCulpritAndDrawsTheStuckOperation) {
  const std::string page = Page(HungJob());
  ASSERT_FALSE(analysis_.verdicts.empty());
  const hang_detector::Verdict& v = analysis_.verdicts.front();
  ASSERT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_NE(page.find("<title>ncclscope report: " +
                      std::string(hang_detector::StageName(analysis_)) + "</title>"),
            std::string::npos);
  EXPECT_NE(page.find(rp::Html(v.summary)), std::string::npos) << v.summary;
  // The timeline: the culprit and its neighbours, the waiters' #3 in red (never completed).
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find(">rank 1 · node-a · pid 1001<"), std::string::npos);
  EXPECT_NE(page.find("allreduce #3 (never completed)"), std::string::npos);
  EXPECT_NE(page.find("class=\"verdict\""), std::string::npos);  // the mark on rank 1's row
  // The cost table and the communicator's progress.
  EXPECT_NE(page.find("<td>world (ranks 0-3)</td><td>allreduce</td>"), std::string::npos);
  EXPECT_NE(page.find("not issued by"), std::string::npos);
  // The job's facts.
  EXPECT_NE(page.find("<td>/traces/job 7</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>world size</td><td>4</td>"), std::string::npos);
  EXPECT_NE(page.find("ncclscope test, 2023-11-14 22:15:21 UTC"), std::string::npos);
}

// Two tp of a split (ranks 0,1 and 2,3), each waiting in its allreduce #2 for one member: every
// row of both tables names which tp it is by its members.
TEST_F(ReportTest, CommunicatorsOfOneNameAreNamedByTheirMembers) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp_low = job.Comm("tp", {0, 1}, world, 1);
  const uint64_t tp_high = job.Comm("tp", {2, 3}, world, 1);
  for (int r = 0; r < 4; ++r) {
    const uint64_t tp = r < 2 ? tp_low : tp_high;
    job.Coll(r, tp, OpType::kAllReduce, 0.1, Done::kCompleted);
    if (r == 0 || r == 2) job.Coll(r, tp, OpType::kAllReduce, 0.2, Done::kPending);
  }
  job.HeartbeatAll(120.0);
  const std::string page = Page(job.Build());
  const size_t stats = page.find("id=\"stats\"");
  const size_t progress = page.find("id=\"progress\"");
  ASSERT_NE(stats, std::string::npos);
  ASSERT_NE(progress, std::string::npos);
  for (const char* tp : {"tp (ranks 0,1)", "tp (ranks 2,3)"}) {
    SCOPED_TRACE(tp);
    const std::string cost_row = std::string("<td>") + tp + "</td><td>allreduce</td>";
    EXPECT_NE(page.find(cost_row, stats), std::string::npos);
    const std::string waiting_row = std::string("<td>") + tp + "</td><td>allreduce #2</td>";
    EXPECT_NE(page.find(waiting_row, progress), std::string::npos);
  }
  EXPECT_EQ(page.find("<td>tp</td>"), std::string::npos);
}

TEST_F(ReportTest, ThePageIsOneFileWithoutScriptsOrFetches) {
  const std::string page = Page(HungJob());
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("url("), std::string::npos);
  // The one address is the SVG namespace, which is a name and never fetched.
  const std::string svg_namespace = "http://www.w3.org/2000/svg\"";
  for (size_t at = page.find("http"); at != std::string::npos; at = page.find("http", at + 1)) {
    EXPECT_EQ(page.compare(at, svg_namespace.size(), svg_namespace), 0) << page.substr(at, 40);
  }
  struct stat st {};
  ASSERT_EQ(stat((dir_.path() + "/report.html").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ReportTest, HostileNamesAreEscaped) {
  const std::string page = Page(HungJob("<script>alert(1)</script>\xff&"));
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;\xEF\xBF\xBD&amp;"), std::string::npos);
  // The name as both tables label the communicator.
  const std::string label =
      "<td>&lt;script&gt;alert(1)&lt;/script&gt;\xEF\xBF\xBD&amp; (ranks 0-3)</td>";
  EXPECT_NE(page.find(label + "<td>allreduce</td>"), std::string::npos);
  EXPECT_NE(page.find(label + "<td>allreduce #3</td>"), std::string::npos);
}

TEST(Html, EscapesMarkupAndReplacesInvalidUtf8) {
  EXPECT_EQ(rp::Html("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(rp::Html("caf\xC3\xA9"), "caf\xC3\xA9");  // valid UTF-8 kept
  EXPECT_EQ(rp::Html("caf\xC3"), "caf\xEF\xBF\xBD");  // cut mid-character
  EXPECT_EQ(rp::Html(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");  // control byte
}

}  // namespace
}  // namespace ncclscope::testing
