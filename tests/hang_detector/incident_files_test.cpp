// The incident files of a trace directory (hang_detector/incident/incident_files.h): keyed by the
// job, so two jobs sharing a directory never silence each other; written atomically and private.
#include "hang_detector/incident/incident_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hang_detector/incident/incident_key.h"

namespace ncclscope::hang_detector {
namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ncclscope-incident-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

TEST(IncidentFiles, EachJobClaimsItsOwnStages) {
  TempDir dir;
  const uint64_t x = JobKey("X"), y = JobKey("Y");
  EXPECT_TRUE(ClaimIncidentStage(dir.path, x, 0xd, "hang"));
  EXPECT_FALSE(ClaimIncidentStage(dir.path, x, 0xd, "hang")) << "once per incident and stage";
  EXPECT_TRUE(ClaimIncidentStage(dir.path, y, 0xd, "hang")) << "another job, same incident key";
  EXPECT_TRUE(ClaimIncidentStage(dir.path, x, 0xd, "suspect"));
  EXPECT_NE(NodeLockPath(dir.path, x), NodeLockPath(dir.path, y));
  EXPECT_NE(IncidentRecordName(x), IncidentRecordName(y));
}

TEST(IncidentFiles, VerdictFileNamesNeverCollide) {
  EXPECT_EQ(VerdictFileName("1234", false), "verdict.json");
  EXPECT_EQ(VerdictFileName("1234", true), "verdict.1234.json");
  EXPECT_NE(VerdictFileName("job", true), "verdict-job.json") << "the exporter's job view";
  EXPECT_NE(VerdictFileName("a", true), VerdictFileName("b", true));
  EXPECT_NE(VerdictFileName("json", true), "verdict.json");
}

TEST(IncidentFiles, WritesAtomicallyWithMode0600) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(dir.path, "verdict.json", "first", &error)) << error;
  ASSERT_TRUE(WriteFileAtomically(dir.path, "verdict.json", "second", &error)) << error;
  struct stat st {};
  ASSERT_EQ(stat((dir.path + "/verdict.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(dir.path + "/verdict.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.exists();
  EXPECT_EQ(files, 1) << "no temporary file is left behind";
  EXPECT_FALSE(WriteFileAtomically(dir.path + "/missing", "verdict.json", "x", &error));
  EXPECT_NE(error.find("missing"), std::string::npos);
}

TEST(IncidentFiles, ARecordIsReadOnlyWhenItIsThisRunsAndWhole) {
  TempDir dir;
  IncidentRecord r;
  r.job_id = "7";
  r.job = JobKey("7");
  r.holder_pid = 1;
  r.written_wall_ns = 1000;
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(dir.path, IncidentRecordName(r.job), RenderIncident(r), &error));
  EXPECT_TRUE(ReadIncidentRecord(dir.path, r.job, 999, &error).has_value());
  EXPECT_FALSE(ReadIncidentRecord(dir.path, r.job, 1001, &error).has_value());
  EXPECT_TRUE(error.empty()) << "an earlier run's record is no error";
  EXPECT_FALSE(ReadIncidentRecord(dir.path, JobKey("8"), 0, &error).has_value());
  ASSERT_TRUE(WriteFileAtomically(dir.path, IncidentRecordName(r.job), "garbage\n", &error));
  EXPECT_FALSE(ReadIncidentRecord(dir.path, r.job, 0, &error).has_value());
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
}

}  // namespace
}  // namespace ncclscope::hang_detector
