// A job over two simulated nodes, as a user correlates it: a hang scenario of the catalogue run by
// `ncclscope sim`, its ring files split by rank into two node directories, one `ncclscope
// exporter` per directory on its own loopback port, and `ncclscope analyze --from` both exporters.
// What a user notices: the same headline verdict (class, communicator, sequence number, culprits)
// as `ncclscope analyze` of the whole directory; the same through digest files on a shared
// directory (`ncclscope digest`); an exporter that cannot be reached is named in the input and
// the rest still answers; nothing reachable at all is exit code 3 with the reasons; a digest file
// that two nodes write (alike host names) is said by the writer whose digest was replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"
#include "trace/ring_visitor.h"

namespace ncclscope::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kRanks = 8;

class RankOf final : public trace::RingVisitor {
 public:
  void BeginFile(const trace::RingInfo& info) override { rank = info.global_rank; }
  void Records(const trace::StoredRecord*, size_t) override {}
  void EndFile(const trace::RingInfo&) override {}
  int rank = -1;
};

// The ring files the job wrote, wherever under `dir` the launcher put them.
std::vector<fs::path> RingFiles(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".ring") out.push_back(e.path());
  }
  return out;
}

// Copies ranks [0, kRanks/2) into dir_a and the others into dir_b: two nodes' directories.
void Split(const std::vector<fs::path>& rings, const std::string& dir_a, const std::string& dir_b) {
  fs::create_directories(dir_a);
  fs::create_directories(dir_b);
  for (const fs::path& p : rings) {
    RankOf r;
    std::string error;
    ASSERT_TRUE(trace::VisitRingFile(p.string(), &r, &error)) << error;
    ASSERT_GE(r.rank, 0) << p;
    fs::copy_file(p, fs::path(r.rank < kRanks / 2 ? dir_a : dir_b) / p.filename());
  }
}

struct Analyzed {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json members
  int exit_code = -1;
  nlohmann::json j;
  std::string err;
};

Analyzed AnalyzeJson(std::vector<std::string> args) {
  args.insert(args.begin(), {Cli(), "analyze"});
  args.push_back("--json");
  const ProcessResult p = RunProcess(args, {}, 60);
  Analyzed a;
  a.exit_code = p.exit_code;
  a.err = p.err;
  a.j = nlohmann::json::parse(p.out, nullptr, false);
  return a;
}

// What a user reads first: the headline verdict.
std::string Headline(const nlohmann::json& j) {
  if (j.is_discarded() || !j.contains("verdicts") || j["verdicts"].empty()) return "(none)";
  const auto& v = j["verdicts"][0];
  return v["class"].get<std::string>() + " comm=" + v["comm_name"].get<std::string>() +
         " seq=" + std::to_string(v["seq"].get<uint64_t>()) + " culprits=" + v["culprits"].dump();
}

class Exporter {
 public:
  Exporter(const std::string& dir, const std::string& log)
      : process_({Cli(), "exporter", "--dir", dir, "--listen", "127.0.0.1:0"}, log) {
    port_ = process_.WaitForPort(30);
    EXPECT_GT(port_, 0) << process_.Output();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  BackgroundProcess process_;
  int port_ = -1;
};

class SplitJob : public ::testing::TestWithParam<const char*> {};

TEST_P(SplitJob, DigestsOfTwoNodesGiveTheVerdictOfTheWholeDirectory) {
  ScratchDir scratch;
  // A job killed before its fault stalled it for analyze's threshold (a slow start on a loaded
  // machine) reads as healthy: it runs again with twice the launcher's time, up to 20 s.
  std::vector<fs::path> rings;
  Analyzed whole;
  for (double kill_s = kKillAfterS;; kill_s *= 2) {
    const std::string job = scratch / ("job-" + std::to_string(static_cast<int>(kill_s)));
    RunSim(std::string(GetParam()) + ".json", kRanks, job, kill_s);
    rings = RingFiles(job);
    ASSERT_EQ(rings.size(), static_cast<size_t>(kRanks));
    whole = AnalyzeJson({rings.front().parent_path().string()});
    ASSERT_FALSE(whole.j.is_discarded()) << whole.err;
    if (Headline(whole.j).rfind("healthy ", 0) != 0 || kill_s >= 20) break;
  }
  ASSERT_FALSE(whole.j.is_discarded()) << whole.err;
  ASSERT_NE(Headline(whole.j), "(none)");
  ASSERT_NE(whole.j["verdicts"][0]["class"], "healthy") << "a hang scenario";

  const std::string a = scratch / "node-a", b = scratch / "node-b";
  Split(rings, a, b);
  {
    Exporter ea(a, scratch / "exporter-a.log"), eb(b, scratch / "exporter-b.log");
    // The endpoint answers protobuf, and only to reading methods.
    const HttpResponse digest = HttpGet(ea.port(), "/digest");
    EXPECT_EQ(digest.status, 200);
    EXPECT_FALSE(digest.body.empty());
    EXPECT_EQ(HttpRequest(ea.port(), "POST", "/digest").status, 405);

    // With and without the /digest path.
    const Analyzed from = AnalyzeJson({"--from", ea.Url(), "--from", eb.Url() + "/digest"});
    ASSERT_FALSE(from.j.is_discarded()) << from.err;
    EXPECT_EQ(Headline(from.j), Headline(whole.j)) << from.j.dump(2) << "\nwhole:\n"
                                                   << whole.j.dump(2);
    EXPECT_EQ(from.exit_code, whole.exit_code);
    EXPECT_EQ(from.j["input"]["files"], kRanks);
    EXPECT_TRUE(from.j["input"]["unreadable"].empty()) << from.j["input"];

    // A hostfile naming both exporters.
    const std::string hostfile = scratch / "hosts";
    {
      std::ofstream h(hostfile);
      h << "# the job's nodes\n127.0.0.1:" << ea.port() << "\n\n  127.0.0.1:" << eb.port()
        << "  # node b\n";
    }
    EXPECT_EQ(Headline(AnalyzeJson({"--from", hostfile}).j), Headline(whole.j));
  }

  // The shared-filesystem transport: each node writes its digest file, one directory holds both.
  const std::string shared = scratch / "shared";
  fs::create_directories(shared);
  for (const auto& [dir, name] : {std::pair{a, "a.digest"}, std::pair{b, "b.digest"}}) {
    const ProcessResult w = RunProcess({Cli(), "digest", dir, "-o", shared + "/" + name}, {}, 60);
    ASSERT_EQ(w.exit_code, 0) << w.err;
    struct stat st {};
    ASSERT_EQ(stat((shared + "/" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(shared)) ++entries;
  EXPECT_EQ(entries, 2u) << "no temporary file left behind";
  const Analyzed files = AnalyzeJson({"--from", shared});
  EXPECT_EQ(Headline(files.j), Headline(whole.j)) << files.j.dump(2);
  EXPECT_EQ(files.exit_code, whole.exit_code);
  // One node's digest plus the other node's ring files read locally.
  EXPECT_EQ(Headline(AnalyzeJson({"--from", shared + "/a.digest", b}).j), Headline(whole.j));
}

// A hang in a split, a device stall localized by the profiler's marks, a send/recv deadlock.
INSTANTIATE_TEST_SUITE_P(Shipped, SplitJob,
                         ::testing::Values("stuck-before", "hang", "wrong-peer", "skip"));

TEST(DigestSources, AnUnreachableExporterIsReportedAndTheRestAnswers) {
  ScratchDir scratch;
  const std::string job = scratch / "job";
  ASSERT_EQ(RunSim("healthy.json", 4, job, 60).exit_code, 0);
  const std::vector<fs::path> rings = RingFiles(job);
  ASSERT_EQ(rings.size(), 4u);
  Exporter e(rings.front().parent_path().string(), scratch / "exporter.log");
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  const Analyzed a = AnalyzeJson({"--from", e.Url(), "--from", "http://127.0.0.1:1"});
  ASSERT_FALSE(a.j.is_discarded()) << a.err;
  EXPECT_NE(a.exit_code, 3) << a.err;
  EXPECT_EQ(a.j["input"]["files"], 4);
  const auto& unreadable = a.j["input"]["unreadable"];
  ASSERT_EQ(unreadable.size(), 1u) << a.j["input"];
  EXPECT_EQ(unreadable[0].get<std::string>().rfind("http://127.0.0.1:1/digest: ", 0), 0u)
      << unreadable[0];
  // The same ranks through two sources are counted once, and that is said.
  const Analyzed twice = AnalyzeJson({"--from", e.Url(), "--from", e.Url() + "/digest"});
  EXPECT_EQ(twice.j["input"]["files"], 4) << twice.j["input"];
  EXPECT_NE(twice.err.find("4 rank(s) reached through more than one source were counted once"),
            std::string::npos)
      << twice.err;
}

TEST(DigestSources, NothingReachableIsExitCode3WithEveryReason) {
  ScratchDir scratch;
  const std::string garbage = scratch / "x.digest";
  std::ofstream(garbage) << '\x08' << '\x07' << "not really";
  const ProcessResult p = RunProcess(
      {Cli(), "analyze", "--from", "http://127.0.0.1:1", "--from", garbage, "--json"}, {}, 60);
  EXPECT_EQ(p.exit_code, 3) << p.err;
  EXPECT_NE(p.err.find("none of 2 digest source(s) could be used"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("http://127.0.0.1:1/digest: "), std::string::npos) << p.err;
  EXPECT_NE(p.err.find(garbage + ": "), std::string::npos) << p.err;
  // Neither a directory nor --from: said, exit code 3.
  const ProcessResult none = RunProcess({Cli(), "analyze"}, {}, 60);
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("give a trace directory, or --from"), std::string::npos) << none.err;
  // A hostfile line that names no host is an input error naming the line.
  const std::string hosts = scratch / "hosts";
  std::ofstream(hosts) << "node1\nnode 2:9478\n";
  const ProcessResult h = RunProcess({Cli(), "analyze", "--from", hosts}, {}, 60);
  EXPECT_EQ(h.exit_code, 3);
  EXPECT_NE(h.err.find(hosts + ":2: 'node 2:9478' is not host[:port]"), std::string::npos) << h.err;
}

TEST(DigestFiles, AFileTwoNodesWriteIsSaidByTheWriterReplaced) {
  // Two nodes with one host name both write `-o /shared/<job>/$(hostname).digest`: each replaces
  // the other's ranks. The writer that keeps rewriting finds another producer's digest in its
  // file and says so, once.
  ScratchDir scratch;
  const std::string a = scratch / "a", b = scratch / "b", file = scratch / "node.digest";
  fs::create_directories(a);
  fs::create_directories(b);
  BackgroundProcess writer({Cli(), "digest", a, "-o", file, "--every", "0.2"},
                           scratch / "writer.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(file) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(file)) << writer.Output();
  const ProcessResult other = RunProcess({Cli(), "digest", b, "-o", file}, {}, 60);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  const std::string said =
      "ncclscope digest: warning: " + file + " was replaced by another producer (host ";
  while (writer.Output().find(said) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string out = writer.Output();
  EXPECT_NE(out.find(said), std::string::npos) << out;
  EXPECT_NE(out.find("two nodes write one file"), std::string::npos) << out;
  EXPECT_NE(out.find("-o DIR/$NCCLSCOPE_HOST.digest"), std::string::npos) << out;
}

}  // namespace
}  // namespace ncclscope::testing
