// Once per incident and stage: the lock file and the stage's stamp decide who reports; the file is
// written atomically and private.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "plugin/incident_report.h"
#include "trace/clock.h"

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ncclscope-wd-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

hd::Verdict Missing(uint64_t comm, uint64_t seq) {
  hd::Verdict v;
  v.cls = hd::VerdictClass::kMissing;
  v.comm_id = comm;
  v.op = "allreduce";
  v.seq = seq;
  v.culprits = {2};
  return v;
}

int64_t SecondsFromNow(int s) {
  return trace::RealtimeNs() + static_cast<int64_t>(s) * 1'000'000'000;
}

TEST(IncidentReport, FirstClaimWinsAndTheSameIncidentIsNotClaimedTwice) {
  TempDir dir;
  const hd::Verdict v = Missing(0xd, 2);
  EXPECT_TRUE(ClaimIncident(dir.path, v, 0, "hang"));
  EXPECT_FALSE(ClaimIncident(dir.path, v, 0, "hang"));  // another rank, same stuck operation
  hd::Verdict desync = v;
  desync.cls = hd::VerdictClass::kDesync;  // seen a few ms later as another class
  EXPECT_FALSE(ClaimIncident(dir.path, desync, 0, "hang"));
  // A later, different incident: it began after the last report.
  EXPECT_TRUE(ClaimIncident(dir.path, Missing(0xd, 3), SecondsFromNow(1), "hang"));
}

TEST(IncidentReport, SuspectAndHangAreEachReportedOncePerIncident) {
  TempDir dir;
  const hd::Verdict v = Missing(0xd, 2);
  const int64_t onset = SecondsFromNow(-5);
  EXPECT_TRUE(ClaimIncident(dir.path, v, onset, "suspect"));
  EXPECT_FALSE(ClaimIncident(dir.path, v, onset, "suspect"));
  // The same incident, confirmed later: its hang stage is reported once more, once.
  EXPECT_TRUE(ClaimIncident(dir.path, v, onset, "hang"));
  EXPECT_FALSE(ClaimIncident(dir.path, v, onset, "hang"));
}

TEST(IncidentReport, AReportMadeAfterTheStallBeganSettlesIt) {
  TempDir dir;
  const int64_t onset = SecondsFromNow(-1);
  EXPECT_TRUE(ClaimIncident(dir.path, Missing(0xe, 1), onset, "hang"));
  // Another rank names the same incident differently (it looked a few ms later).
  EXPECT_FALSE(ClaimIncident(dir.path, Missing(0xe, 2), onset, "hang"));
  // A report older than this stall is a previous incident's.
  EXPECT_TRUE(ClaimIncident(dir.path, Missing(0xe, 2), SecondsFromNow(1), "hang"));
}

TEST(IncidentReport, WritesAtomicallyWithMode0600) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(dir.path, "verdict.json", "first", &error)) << error;
  ASSERT_TRUE(WriteFileAtomically(dir.path, "verdict.json", "second", &error)) << error;
  struct stat st {};
  ASSERT_EQ(stat((dir.path + "/verdict.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(dir.path + "/verdict.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second");
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.exists();
  EXPECT_EQ(files, 1);
  EXPECT_FALSE(WriteFileAtomically(dir.path + "/missing", "verdict.json", "x", &error));
  EXPECT_NE(error.find("missing"), std::string::npos);
}

TEST(IncidentReport, StderrBlockIsShortAndNamesTheFile) {
  hd::Analysis a;
  hd::Verdict v = Missing(0xd, 2);
  v.summary = "rank 2 never issued it";
  for (int r = 0; r < 8; ++r) v.evidence.push_back({r, 0, true, "waiting"});
  a.verdicts.push_back(v);
  const std::string block = VerdictBlock(a, "/d/verdict.json", 0, 42);
  EXPECT_NE(block.find("rank 2 never issued it"), std::string::npos);
  EXPECT_NE(block.find("(4 more)"), std::string::npos);
  EXPECT_NE(block.find("/d/verdict.json"), std::string::npos);
  EXPECT_NE(block.find("pid 42"), std::string::npos);
}

}  // namespace
}  // namespace ncclscope::plugin
