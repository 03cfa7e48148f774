// `--peers-from prometheus:URL[:JOB]` against an HTTP server that answers Prometheus' targets API
// (GET /api/v1/targets) from a file, as a Prometheus server scraping the node exporters would: the
// active targets of the scrape job become the exporter's peers, the other jobs' targets do not.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"

namespace ncclscope::testing {
namespace {

constexpr char kTargets[] = R"({"status": "success", "data": {"activeTargets": [
  {"labels": {"job": "ncclscope", "instance": "127.0.0.2:9478"},
   "scrapeUrl": "http://127.0.0.2:9478/metrics", "health": "up"},
  {"labels": {"job": "ncclscope", "instance": "127.0.0.3:9478"},
   "scrapeUrl": "http://127.0.0.3:9478/metrics", "health": "down"},
  {"labels": {"job": "node-exporter", "instance": "127.0.0.4:9100"},
   "scrapeUrl": "http://127.0.0.4:9100/metrics", "health": "up"}
], "droppedTargets": []}})";

TEST(PrometheusPeers, TheScrapeJobsActiveTargetsArePeers) {
  ScratchDir scratch;
  std::filesystem::create_directories(scratch / "api/v1");
  std::ofstream(scratch / "api/v1/targets") << kTargets;
  // python3's file server, on a port it picks and prints ("port 0": the kernel's choice).
  BackgroundProcess server({"python3", "-u", "-c",
                            "import functools, http.server, sys\n"
                            "h = functools.partial(http.server.SimpleHTTPRequestHandler, "
                            "directory=sys.argv[1])\n"
                            "s = http.server.HTTPServer(('127.0.0.1', 0), h)\n"
                            "print('serving on port', s.server_address[1], flush=True)\n"
                            "s.serve_forever()\n",
                            scratch.path()},
                           scratch / "server.log");
  const int prometheus = server.WaitForPort(20);
  ASSERT_GT(prometheus, 0) << server.Output();
  std::filesystem::create_directories(scratch / "trace");
  BackgroundProcess exporter(
      {Cli(), "exporter", "--dir", scratch / "trace", "--listen", "127.0.0.1:0", "--peers-from",
       "prometheus:http://127.0.0.1:" + std::to_string(prometheus) + ":ncclscope"},
      scratch / "exporter.log");
  const int port = exporter.WaitForPort(20);
  ASSERT_GT(port, 0) << exporter.Output();
  std::string text;
  for (int i = 0; i < 600 && text.find("127.0.0.3:9478") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = HttpGet(port, "/metrics").body;
  }
  EXPECT_NE(text.find("ncclscope_peer_up{peer=\"127.0.0.2:9478\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("ncclscope_peer_up{peer=\"127.0.0.3:9478\"}"), std::string::npos) << text;
  EXPECT_EQ(text.find("127.0.0.4"), std::string::npos) << "another scrape job's target\n" << text;
}

}  // namespace
}  // namespace ncclscope::testing
