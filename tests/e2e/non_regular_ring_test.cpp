// *.ring entries that are not regular files (a FIFO, a symlink to a character device, a directory,
// a dangling symlink) next to a job's real rings: analyze, dump and the exporter's scrape finish,
// read the real rings, and name every skipped entry with why. Opening the FIFO would block each of
// them forever; every run here is bounded, so such a regression fails instead of hanging.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/synthetic_ring.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"

namespace ncclscope::testing {
namespace {

struct Entry {
  std::string path;
  std::string why;
};

// Two real rings of rank 0 and 1 plus one entry of each hostile kind.
std::vector<Entry> HostileDir(const std::string& dir) {
  EXPECT_FALSE(WriteSyntheticRing(dir, 0, 2).empty());  // creates dir, private
  EXPECT_FALSE(WriteSyntheticRing(dir, 1, 2).empty());
  std::vector<Entry> entries = {{dir + "/fifo.ring", "not a regular file (fifo)"},
                                {dir + "/zero.ring", "not a regular file (character device)"},
                                {dir + "/dir.ring", "not a regular file (directory)"},
                                {dir + "/gone.ring", "dangling symlink"}};
  EXPECT_EQ(mkfifo(entries[0].path.c_str(), 0600), 0);
  EXPECT_EQ(symlink("/dev/zero", entries[1].path.c_str()), 0);
  EXPECT_EQ(mkdir(entries[2].path.c_str(), 0700), 0);
  EXPECT_EQ(symlink((dir + "/nothing").c_str(), entries[3].path.c_str()), 0);
  return entries;
}

TEST(NonRegularRingEntries, AnalyzeReadsTheRealRingsAndNamesTheRest) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const std::vector<Entry> entries = HostileDir(dir);
  for (const bool json : {false, true}) {
    std::vector<std::string> argv = {Cli(), "analyze", dir, "--no-process-checks"};
    if (json) argv.emplace_back("--json");
    const ProcessResult p = RunProcess(argv, {}, 30);
    ASSERT_FALSE(p.timed_out) << "analyze blocked on a non-regular *.ring entry";
    EXPECT_EQ(p.exit_code, 0) << p.err << p.out;
    EXPECT_NE(p.out.find(json ? "\"files\": 2" : "input: 2 ring file(s); saw 2 of 2 ranks"),
              std::string::npos)
        << p.out;
    for (const Entry& e : entries) {
      EXPECT_NE(p.out.find(e.path + ": " + e.why), std::string::npos) << e.path << "\n" << p.out;
    }
  }
}

TEST(NonRegularRingEntries, DumpPrintsTheRealRingsAndNamesTheRest) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const std::vector<Entry> entries = HostileDir(dir);
  const ProcessResult p = RunProcess({Cli(), "dump", dir}, {}, 30);
  ASSERT_FALSE(p.timed_out) << "dump blocked on a non-regular *.ring entry";
  EXPECT_EQ(p.exit_code, 3) << "skipped files make the exit code say so\n" << p.err;
  for (const Entry& e : entries) {
    EXPECT_NE(p.err.find("skipped " + e.path + ": " + e.why), std::string::npos) << p.err;
  }
  EXPECT_NE(p.out.find("# rank 0 "), std::string::npos) << p.out.substr(0, 2000);
  EXPECT_NE(p.out.find("# rank 1 "), std::string::npos) << p.out.substr(0, 2000);
}

// The value of an unlabelled series in a scrape; -1 when absent.
double Series(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + name.size() + 2);
}

// A scrape that opened the FIFO would never answer: ctest's timeout (tests/e2e/CMakeLists.txt)
// then fails the test.
TEST(NonRegularRingEntries, TheExportersScrapeServesTheRealRingsAndCountsTheRest) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const std::vector<Entry> entries = HostileDir(dir);
  BackgroundProcess exporter({Cli(), "exporter", "--dir", dir, "--listen", "127.0.0.1:0"},
                             scratch / "exporter.log");
  const int port = exporter.WaitForPort(20);
  ASSERT_GT(port, 0) << exporter.Output();
  const HttpResponse r = HttpGet(port, "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Series(r.body, "ncclscope_exporter_ring_files"), 2) << r.body;
  EXPECT_GE(Series(r.body, "ncclscope_exporter_read_errors_total"), 4) << r.body;
  const std::string log = exporter.Output();
  for (const Entry& e : entries) {
    EXPECT_NE(log.find(e.path + ": " + e.why), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace ncclscope::testing
