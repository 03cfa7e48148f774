// One job over two simulated nodes, as a user runs it: `ncclscope sim --nodes 2` of a hang whose
// culprit (rank 5) is on the second node, and one `ncclscope exporter --peers` per node on its
// own loopback port, each peering the other. What a user notices on /metrics:
// - the exporter of the node holding rank 0 correlates, and its job view names the culprit
//   `ncclscope analyze` names from every file; the other exporter only serves;
// - an exporter that stops answering is shown unreachable, its ranks unseen (never dead, never
//   culprits); when it answers again its ranks come back;
// - when the correlating exporter goes, the other one takes over;
// - exporters started without their node's name (both call themselves this machine) are told
//   apart: each warns once with the NCCLSCOPE_HOST it needs, and the job view still names the
//   culprit from all 8 ranks.
// Every wait polls for the condition with a generous deadline: nothing asserts how fast.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"
#include "tests/exporters/scrape_text.h"

namespace ncclscope::testing {
namespace {

namespace fs = std::filesystem;

constexpr double kDeadlineS = 90;  // a loaded 2-core machine; the defaults take seconds

// A port nothing listens on now (bound, read back, closed): each exporter must know the other's
// port before either starts. Another program taking it in between (unlikely on loopback) fails
// the test with the exporter's "cannot listen" line.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// `ncclscope exporter` of one simulated node: its host name (the process checks treat its ranks
// as local; empty: none, so it takes this machine's), its directory, its port, and its peer.
std::unique_ptr<BackgroundProcess> StartExporter(const std::string& host, const std::string& dir,
                                                 int port, int peer_port, const std::string& log) {
  auto p = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{
          "env", host.empty() ? "--unset=NCCLSCOPE_HOST" : "NCCLSCOPE_HOST=" + host, Cli(),
          "exporter", "--dir", dir, "--listen", "127.0.0.1:" + std::to_string(port), "--peers",
          "127.0.0.1:" + std::to_string(peer_port)},
      log);
  EXPECT_EQ(p->WaitForPort(60), port) << p->Output();
  return p;
}

std::string Metrics(int port) {
  return HttpGet(port, "/metrics").body;
}

// Polls until `ok` holds for a scrape of `port`; returns that scrape ("" when the deadline
// passed, which fails the caller's next assertion with the last scrape in `last`).
std::string WaitFor(int port, const std::function<bool(const std::string&)>& ok,
                    std::string* last) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kDeadlineS);
  while (std::chrono::steady_clock::now() < deadline) {
    *last = Metrics(port);
    if (ok(*last)) return *last;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return "";
}

bool Role(const std::string& text, const char* role) {
  return Value(text, std::string(R"(ncclscope_exporter_role{role=")") + role + "\"}") == 1.0;
}

// The ranks the job view's verdicts name as culprits.
std::vector<std::string> JobCulprits(const std::string& text) {
  std::vector<std::string> ranks;
  std::istringstream lines(text);
  std::string line;
  const std::regex series(R"re(^ncclscope_verdict\{(.*)\} 1$)re");
  const std::regex rank(R"re(rank="([0-9]+)")re");
  std::smatch m, r;
  while (std::getline(lines, line)) {
    if (!std::regex_match(line, m, series)) continue;
    const std::string labels = m[1].str();
    if (labels.find(R"(scope="job")") == std::string::npos) continue;
    if (std::regex_search(labels, r, rank)) ranks.push_back(r[1].str());
  }
  return ranks;
}

// `ncclscope sim --nodes 2` of the catalogue's stuck-before with its culprit moved to rank 5, on
// the second node; the launcher kills the hung job after 5 s and its files stay, as after a real
// hang. Sets the two nodes' directories (node0: ranks 0-3, node1: ranks 4-7).
void SimStuckAtRank5(const ScratchDir& scratch, std::string* node0, std::string* node1) {
  std::ifstream in(ScenarioPath("stuck-before.json"));
  nlohmann::json scenario = nlohmann::json::parse(in);
  scenario["faults"][0]["ranks"] = {5};
  const std::string scenario_path = scratch / "stuck-rank5.json";
  std::ofstream(scenario_path) << scenario.dump();
  const std::string base = scratch / "trace";
  const ProcessResult sim = RunProcess({Cli(), "sim", "--ranks", "8", "--nodes", "2", "--scenario",
                                        scenario_path, "--dir", base, "--timeout", "5"},
                                       {{"NCCLSCOPE_RING_RECORDS", "4096"}}, 120);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(sim.out, m, std::regex("job (sim-[0-9a-f]+)"))) << sim.out;
  *node0 = base + "/" + m[1].str() + "/node0";
  *node1 = base + "/" + m[1].str() + "/node1";
}

TEST(JobView, TheNodeOfRankZeroCorrelatesAndTheOtherTakesOver) {
  ScratchDir scratch;
  std::string node0, node1;
  ASSERT_NO_FATAL_FAILURE(SimStuckAtRank5(scratch, &node0, &node1));

  // What `ncclscope analyze` says of every file in one directory: the true culprit.
  const std::string whole = scratch / "whole";
  fs::create_directories(whole);
  for (const std::string& dir : {node0, node1}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".ring") fs::copy_file(e.path(), whole / e.path().filename());
    }
  }
  const ProcessResult analyzed = RunProcess({Cli(), "analyze", whole, "--json"}, {}, 60);
  const nlohmann::json a = nlohmann::json::parse(analyzed.out, nullptr, false);
  ASSERT_FALSE(a.is_discarded()) << analyzed.err;
  const nlohmann::json& headline = a["verdicts"][0];
  ASSERT_EQ(headline["class"], "missing") << a.dump(2);
  ASSERT_EQ(headline["culprits"], nlohmann::json::array({5})) << a.dump(2);
  const std::string comm = headline["comm_name"];

  int p0 = FreePort(), p1 = FreePort();
  auto e0 = StartExporter("node0", node0, p0, p1, scratch / "e0.log");
  auto e1 = StartExporter("node1", node1, p1, p0, scratch / "e1.log");

  // Node0 holds rank 0: it correlates, and once it has node1's digest (node1's exporter may
  // start after its first cycle) its job view names rank 5 as analyze does.
  std::string last;
  std::string text = WaitFor(
      p0,
      [](const std::string& t) {
        return Value(t, R"(ncclscope_ranks_seen{scope="job"})") == 8.0 && !JobCulprits(t).empty();
      },
      &last);
  ASSERT_FALSE(text.empty()) << "no job verdict on node0's exporter:\n" << last << e0->Output();
  EXPECT_TRUE(Role(text, "correlating")) << text;
  EXPECT_EQ(JobCulprits(text), std::vector<std::string>{"5"}) << text;
  EXPECT_EQ(Sum(text, "ncclscope_verdict",
                {{"scope", "job"}, {"class", "missing"}, {"comm", comm}, {"rank", "5"}}),
            1)
      << text;
  EXPECT_EQ(Value(text, R"(ncclscope_ranks_seen{scope="job"})"), 8) << text;
  EXPECT_EQ(Value(text, R"(ncclscope_ranks_seen{scope="node"})"), 4) << text;
  EXPECT_EQ(Value(text, R"(ncclscope_world_size{scope="job"})"), 8) << text;
  EXPECT_EQ(Value(text, "ncclscope_peer_up{peer=\"127.0.0.1:" + std::to_string(p1) + "\"}"), 1)
      << text;
  // Node0 alone does not see rank 5: its node view names no culprit there.
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"scope", "node"}, {"rank", "5"}}), 0) << text;

  // The job view is also a file in the correlating node's directory, as `analyze --json` writes
  // it (written before /metrics shows the view, rewritten when it changes).
  const std::string verdict_file = node0 + "/verdict-job.json";
  struct stat st {};
  ASSERT_EQ(stat(verdict_file.c_str(), &st), 0) << verdict_file;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream vf(verdict_file);
  const nlohmann::json written = nlohmann::json::parse(vf, nullptr, false);
  ASSERT_FALSE(written.is_discarded()) << verdict_file;
  EXPECT_EQ(written["verdicts"][0]["culprits"], nlohmann::json::array({5})) << written.dump(2);
  EXPECT_EQ(written["input"]["ranks_seen"], 8) << written["input"];

  // Node1 serves only, once it has learnt where node0 stands.
  text = WaitFor(
      p1, [](const std::string& t) { return Role(t, "serving"); }, &last);
  ASSERT_FALSE(text.empty()) << "node1's exporter never settled on serving:\n" << last;
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"scope", "job"}}), 0) << text;

  // Node1's exporter goes: it is unreachable, its ranks unseen, nobody is dead.
  const std::string peer1 = "ncclscope_peer_up{peer=\"127.0.0.1:" + std::to_string(p1) + "\"}";
  e1->Stop(30);
  text = WaitFor(
      p0, [&](const std::string& t) { return Value(t, peer1) == 0.0; }, &last);
  ASSERT_FALSE(text.empty()) << "node1 never shown unreachable:\n" << last;
  text = WaitFor(
      p0,
      [](const std::string& t) { return Value(t, R"(ncclscope_ranks_seen{scope="job"})") == 4.0; },
      &last);
  ASSERT_FALSE(text.empty()) << "node1's ranks still seen:\n" << last;
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"class", "dead"}}), 0) << text;
  for (const std::string& r : JobCulprits(text)) {
    EXPECT_LT(std::stoi(r), 4) << "an unseen rank named as a culprit:\n" << text;
  }
  EXPECT_TRUE(Role(text, "correlating")) << text;

  // It answers again: its ranks come back, and so does the culprit.
  e1 = StartExporter("node1", node1, p1, p0, scratch / "e1-again.log");
  text = WaitFor(
      p0,
      [](const std::string& t) {
        return Value(t, R"(ncclscope_ranks_seen{scope="job"})") == 8.0 &&
               JobCulprits(t) == std::vector<std::string>{"5"};
      },
      &last);
  ASSERT_FALSE(text.empty()) << "node1's ranks never came back:\n" << last;
  EXPECT_EQ(Value(text, peer1), 1) << text;

  // The correlating exporter goes: node1's takes over and names the culprit it holds.
  e0->Stop(30);
  text = WaitFor(
      p1,
      [](const std::string& t) {
        return Role(t, "correlating") && JobCulprits(t) == std::vector<std::string>{"5"};
      },
      &last);
  ASSERT_FALSE(text.empty()) << "node1 never took over:\n" << last << e1->Output();
  EXPECT_EQ(Value(text, "ncclscope_peer_up{peer=\"127.0.0.1:" + std::to_string(p0) + "\"}"), 0)
      << text;
  EXPECT_EQ(Value(text, R"(ncclscope_ranks_seen{scope="job"})"), 4) << text;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(JobView, ExportersWithoutTheirNodesNameAreToldApartAndSaySo) {
  ScratchDir scratch;
  std::string node0, node1;
  ASSERT_NO_FATAL_FAILURE(SimStuckAtRank5(scratch, &node0, &node1));
  // No NCCLSCOPE_HOST: both exporters call themselves this machine, while their ring files name
  // node0 and node1. Each used to take the other's digest for its own, correlate alone and see
  // four ranks, silently.
  int p0 = FreePort(), p1 = FreePort();
  auto e0 = StartExporter("", node0, p0, p1, scratch / "e0.log");
  auto e1 = StartExporter("", node1, p1, p0, scratch / "e1.log");

  std::string last;
  std::string text = WaitFor(
      p0,
      [](const std::string& t) {
        return Value(t, R"(ncclscope_ranks_seen{scope="job"})") == 8.0 && !JobCulprits(t).empty() &&
               Value(t, "ncclscope_peer_clashes") == 1.0;
      },
      &last);
  ASSERT_FALSE(text.empty()) << "no 8-rank job view on node0's exporter:\n" << last << e0->Output();
  EXPECT_TRUE(Role(text, "correlating")) << text;
  EXPECT_EQ(JobCulprits(text), std::vector<std::string>{"5"}) << text;
  text = WaitFor(
      p1,
      [](const std::string& t) {
        return Role(t, "serving") && Value(t, "ncclscope_peer_clashes") == 1.0;
      },
      &last);
  ASSERT_FALSE(text.empty()) << "node1's exporter never served, or never saw the clash:\n"
                             << last << e1->Output();
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"scope", "job"}}), 0) << "one correlator:\n" << text;

  // One line each, naming the peer and the value that fixes it; said once, not every cycle.
  const std::string out0 = e0->Output(), out1 = e1->Output();
  const std::string clash0 =
      "ncclscope exporter: warning: host name clash: http://127.0.0.1:" + std::to_string(p1) +
      "/digest is another exporter calling itself";
  EXPECT_EQ(Count(out0, clash0), 1u) << out0;
  EXPECT_NE(out0.find("start this one with NCCLSCOPE_HOST=node0, the host its ring files name"),
            std::string::npos)
      << out0;
  EXPECT_EQ(Count(out1, "warning: host name clash: http://127.0.0.1:" + std::to_string(p0)), 1u)
      << out1;
  EXPECT_NE(out1.find("NCCLSCOPE_HOST=node1"), std::string::npos) << out1;

  // The job view tells the SRE too: a line of its input report.
  std::ifstream vf(node0 + "/verdict-job.json");
  const nlohmann::json written = nlohmann::json::parse(vf, nullptr, false);
  ASSERT_FALSE(written.is_discarded());
  EXPECT_EQ(written["input"]["ranks_seen"], 8) << written["input"];
  bool noted = false;
  for (const auto& n : written["input"]["notes"]) {
    noted = noted || n.get<std::string>().find("host name clash") != std::string::npos;
  }
  EXPECT_TRUE(noted) << written["input"];
}

TEST(JobView, BadPeerValuesAreAnErrorNamingTheOption) {
  ScratchDir scratch;
  const ProcessResult p =
      RunProcess({Cli(), "exporter", "--dir", scratch.path(), "--listen", "127.0.0.1:0",
                  "--peers-from", "slurm"},
                 {{"SLURM_JOB_NODELIST", "gpu[01-"}, {"SLURM_NODELIST", ""}}, 30);
  EXPECT_EQ(p.exit_code, 3) << p.err;
  EXPECT_NE(p.err.find("--peers-from slurm: SLURM_JOB_NODELIST='gpu[01-': '[' without ']'"),
            std::string::npos)
      << p.err;
  const ProcessResult q = RunProcess(
      {Cli(), "exporter", "--dir", scratch.path(), "--listen", "127.0.0.1:0", "--peers", "a b"}, {},
      30);
  EXPECT_EQ(q.exit_code, 3) << q.err;
  EXPECT_NE(q.err.find("--peers a b: neither an http:// URL"), std::string::npos) << q.err;
}

}  // namespace
}  // namespace ncclscope::testing
