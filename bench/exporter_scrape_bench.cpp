// A scrape of a node with 64 ranks x 8 communicators, end to end: reading what is new in 64 real
// ring files, building the families, serializing the text, and once over HTTP. Target: <= 20 ms
// (docs/performance.md). Ring files are written by the real RingWriter into a temporary
// directory; writing happens with the timer paused.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exporters/prometheus/http_endpoint.h"
#include "exporters/prometheus/metric_families.h"
#include "exporters/prometheus/metrics_collectable.h"
#include "exporters/prometheus/node_aggregator.h"
#include "exporters/sources/ring_source.h"
#include "trace/clock.h"
#include "trace/ring_writer.h"

namespace {

using namespace ncclscope;

constexpr int kRanks = 64;
constexpr int kComms = 8;
constexpr trace::OpType kOps[] = {trace::OpType::kAllReduce, trace::OpType::kAllGather,
                                  trace::OpType::kReduceScatter, trace::OpType::kBroadcast};

// 64 writers (one per rank, as 64 processes would have) over one directory.
class Node {
 public:
  Node() {
    char pattern[] = "/tmp/ncclscope-bench-exporter-XXXXXX";
    dir_ = mkdtemp(pattern);
    for (int r = 0; r < kRanks; ++r) {
      trace::RingOptions o;
      o.dir = dir_ + "/trace";
      o.record_capacity = 1 << 14;
      o.global_rank = r;
      o.local_rank = r % 8;
      o.world_size = kRanks;
      o.job_id = "bench";
      std::string error;
      writers_.push_back(trace::RingWriter::Create(o, &error));
      for (int c = 0; c < kComms; ++c) {
        trace::CommInfo info;
        info.id = 0x1000 + static_cast<uint64_t>(c);
        info.rank = r;
        info.nranks = kRanks;
        info.name = "comm" + std::to_string(c);
        writers_.back()->AddComm(info);
      }
    }
  }
  ~Node() {
    writers_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string trace_dir() const { return dir_ + "/trace"; }

  // `per_rank` more completed operations on every rank, spread over the communicators and ops.
  void Advance(int per_rank) {
    for (int i = 0; i < per_rank; ++i, ++step_) {
      for (int r = 0; r < kRanks; ++r) {
        trace::RecordData d{};
        d.comm_id = 0x1000 + static_cast<uint64_t>(step_ % kComms);
        d.seq = step_ / kComms + 1;
        d.op = static_cast<uint32_t>(kOps[step_ % 4]);
        d.count = uint64_t{1} << (10 + step_ % 12);
        d.dtype = 7;
        d.peer = -1;
        d.t_enter_ns = step_ * 1000000 + int64_t{r} * 1000;
        d.t_exit_ns = d.t_enter_ns + 5000;
        const uint64_t slot = writers_[static_cast<size_t>(r)]->Append(d, true);
        writers_[static_cast<size_t>(r)]->CompleteDevice(slot, step_ * 1000000 + 900000);
      }
    }
  }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<trace::RingWriter>> writers_;
  int64_t step_ = 0;
};

std::string Scrape(exporters::NodeAggregator& aggregator) {
  aggregator.Refresh(trace::MonotonicNs());
  return prometheus::TextSerializer().Serialize(
      exporters::RenderFamilies(aggregator.View(nullptr)));
}

// A steady job: state.range(0) new operations per rank since the previous scrape.
void BM_Scrape64Ranks8Comms(benchmark::State& state) {
  Node node;
  node.Advance(200);
  exporters::DirRingSource source(node.trace_dir());
  exporters::NodeAggregator aggregator(&source, {});
  Scrape(aggregator);
  size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    node.Advance(static_cast<int>(state.range(0)));
    state.ResumeTiming();
    bytes = Scrape(aggregator).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["text_bytes"] = static_cast<double>(bytes);
  state.counters["records_per_scrape"] = static_cast<double>(state.range(0) * kRanks);
}
BENCHMARK(BM_Scrape64Ranks8Comms)->Arg(0)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// The first scrape of an exporter started next to a running job: every ring holds 16384 records.
void BM_FirstScrapeOfFullRings(benchmark::State& state) {
  Node node;
  node.Advance(1 << 14);
  exporters::DirRingSource source(node.trace_dir());
  for (auto _ : state) {
    exporters::NodeAggregator aggregator(&source, {});
    benchmark::DoNotOptimize(Scrape(aggregator).size());
  }
}
BENCHMARK(BM_FirstScrapeOfFullRings)->Unit(benchmark::kMillisecond)->Iterations(5);

// GET /metrics over loopback HTTP, as Prometheus scrapes, with 100 new operations per rank.
void BM_HttpGetMetrics(benchmark::State& state) {
  Node node;
  node.Advance(200);
  exporters::DirRingSource source(node.trace_dir());
  exporters::NodeAggregator aggregator(&source, {});
  std::string error;
  const auto endpoint = exporters::HttpEndpoint::Start(
      "127.0.0.1:0", std::make_shared<exporters::MetricsCollectable>(&aggregator, nullptr), &error);
  if (endpoint == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    node.Advance(100);
    state.ResumeTiming();
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(endpoint->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
      close(fd);
      state.SkipWithError("GET /metrics failed");
      return;
    }
    char buf[65536];
    bytes = 0;
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) bytes += static_cast<size_t>(n);
    close(fd);
  }
  state.counters["response_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_HttpGetMetrics)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
