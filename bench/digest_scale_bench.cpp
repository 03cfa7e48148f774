// digest_scale_bench: node digests at scale (docs/performance.md, "Node digests at
// scale"), on one machine. Three modes, run together by bench/run_digest_scale_bench.sh:
//
//   node       the exporter's cost on one node: 8 full (wrapped) rings of the default size, the
//              node's digest built from them again and again as /digest does once a second: time,
//              CPU and memory per build.
//   serve      a live 4096-rank job (bench/synth_node.h) with one culprit, 512 nodes of 8 ranks:
//              each node's rings written through RingWriter and its digest built as the exporter
//              builds it (sizes and build times printed), then every digest served on its own
//              loopback port (bench/loopback_http.h) until SIGINT/SIGTERM; the ports go to a
//              hostfile, written once everything listens.
//   correlate  the correlating instance: every cycle fetches the hostfile's digests in parallel
//              (exporters/multinode/digest_fetch.h), decodes them, indexes them
//              (JobIndex::FromFiles) and runs the correlator, timing each part; checks that the
//              headline names the culprit (exit 1 when it does not) and prints the peak RSS.
//
// Usage: digest_scale_bench node [--ring N] [--records N] [--builds N] [--dir DIR]
//        digest_scale_bench serve --hostfile PATH [--records N] [--ring N] [--culprit R]
//                                 [--hang-age S] [--dir DIR] [--nodes N]
//        digest_scale_bench correlate --from HOSTFILE --culprit R --seq N [--cycles N]
//                                     [--target-s S]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/loopback_http.h"
#include "bench/synth_node.h"
#include "exporters/multinode/digest_codec.h"
#include "exporters/multinode/digest_fetch.h"
#include "exporters/multinode/node_digest.h"
#include "exporters/sources/ring_source.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "trace/clock.h"

namespace ncclscope::bench {
namespace {

namespace hd = hang_detector;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double CpuS() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// A field of /proc/self/status in KiB ("VmHWM", "VmRSS", "RssAnon", "RssFile"); -1 when absent.
long StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

struct Stats {
  double median = 0, p90 = 0, min = 0, max = 0;
};
Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  s.min = v.front();
  s.max = v.back();
  return s;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// The producing node's probe: every writer of the node runs (the job is live).
class NodeProbe final : public hd::ProcessProbe {
 public:
  explicit NodeProbe(std::string host) : host_(std::move(host)) {}
  std::string ThisHost() const override { return host_; }
  hd::ProcessState State(int /*pid*/) const override { return hd::ProcessState::kRunning; }

 private:
  std::string host_;
};

struct Args {
  std::string mode;
  SynthNodeOptions job;
  std::string dir = "/tmp";
  std::string hostfile;
  std::string from;
  int builds = 10;
  int cycles = 5;
  int nodes = -1;  // serve: all of them
  uint64_t seq = 0;
  double target_s = 1.0;
  bool records_given = false;
};

bool ParseArgs(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (arg == "--ring") {
      a->job.ring_records = std::strtoull(v, nullptr, 10);
    } else if (arg == "--records") {
      a->job.records = std::atoll(v);
      a->records_given = true;
    } else if (arg == "--builds") {
      a->builds = std::atoi(v);
    } else if (arg == "--dir") {
      a->dir = v;
    } else if (arg == "--hostfile") {
      a->hostfile = v;
    } else if (arg == "--from") {
      a->from = v;
    } else if (arg == "--culprit") {
      a->job.culprit = std::atoi(v);
    } else if (arg == "--hang-age") {
      a->job.hang_age_s = std::atof(v);
    } else if (arg == "--nodes") {
      a->nodes = std::atoi(v);
    } else if (arg == "--seq") {
      a->seq = std::strtoull(v, nullptr, 10);
    } else if (arg == "--cycles") {
      a->cycles = std::atoi(v);
    } else if (arg == "--target-s") {
      a->target_s = std::atof(v);
    } else {
      return false;
    }
  }
  if (a->mode == "node") return a->builds > 0;
  if (a->mode == "serve") return !a->hostfile.empty();
  if (a->mode == "correlate") return !a->from.empty() && a->job.culprit >= 0 && a->cycles > 0;
  return false;
}

std::string TempDir(const std::string& under, const char* what) {
  std::string pattern = under + "/ncclscope-" + what + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// --- node: the exporter's cost of /digest on one node ---

int Node(const Args& a) {
  SynthNodeOptions o = a.job;
  o.hang = false;
  // Full rings: half as many records again as they hold, so every ring wrapped.
  if (!a.records_given) o.records = static_cast<int64_t>(o.ring_records * 3 / 2);
  SynthNodeJob job;
  std::string error;
  if (!job.Init(o, &error)) {
    std::fprintf(stderr, "digest_scale_bench: %s\n", error.c_str());
    return 2;
  }
  const std::string dir = TempDir(a.dir, "node");
  if (dir.empty()) {
    std::perror("digest_scale_bench: mkdtemp");
    return 2;
  }
  // The rings are written by a child, so the writer's mappings never count in this process's RSS.
  const auto t_write = Clock::now();
  const pid_t child = fork();
  if (child == 0) {
    std::string why;
    if (!job.WriteNode(0, dir, &why)) {
      std::fprintf(stderr, "digest_scale_bench: %s\n", why.c_str());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::filesystem::remove_all(dir);
    return 2;
  }
  std::printf(
      "node: 8 rings of %llu slots (%.0f MiB each), about %lld records written per rank, "
      "in %.1f s\n",
      static_cast<unsigned long long>(o.ring_records),
      static_cast<double>(o.ring_records) * 128 / (1 << 20), static_cast<long long>(o.records),
      Since(t_write));
  const long hwm0 = StatusKib("VmHWM");
  const long anon0 = StatusKib("RssAnon");
  std::vector<double> wall, cpu;
  exporters::NodeDigestStats st;
  {
    // One source for every build, as the exporter keeps one: files stay mapped between builds.
    exporters::DirRingSource source(dir);
    const NodeProbe probe(SynthNodeJob::Host(0));
    for (int b = 0; b < a.builds; ++b) {
      const double c0 = CpuS();
      const auto t0 = Clock::now();
      const std::string bytes =
          exporters::BuildNodeDigest(&source, probe, job.now_wall_ns(), {}, &st);
      wall.push_back(Since(t0));
      cpu.push_back(CpuS() - c0);
      if (!st.unreadable.empty() || st.ranks != 8) {
        std::fprintf(stderr, "digest_scale_bench: %zu ranks read; %s\n", st.ranks,
                     st.unreadable.empty() ? "" : st.unreadable.front().c_str());
        std::filesystem::remove_all(dir);
        return 1;
      }
    }
    const Stats w = Summarize(wall), c = Summarize(cpu);
    std::printf("node: %zu ranks, %llu records read, %llu kept, digest %zu bytes\n", st.ranks,
                static_cast<unsigned long long>(st.records),
                static_cast<unsigned long long>(st.kept), st.bytes);
    std::printf(
        "node: build (%d builds): wall median %.1f ms (min %.1f, max %.1f), CPU median "
        "%.1f ms; first build %.1f ms (maps and faults in the rings)\n",
        a.builds, w.median * 1e3, w.min * 1e3, w.max * 1e3, c.median * 1e3, wall[0] * 1e3);
    std::printf(
        "node: memory: peak RSS grew by %ld KiB during the builds (anonymous now %+ld "
        "KiB); the rings' mapped pages resident: %ld KiB (page cache, kept mapped)\n",
        StatusKib("VmHWM") - hwm0, StatusKib("RssAnon") - anon0, StatusKib("RssFile"));
    std::printf("node: at one build per second the exporter spends %.0f%% of one core on /digest\n",
                c.median * 100);
    // Where a build's time goes: the same steps as BuildNodeDigest, each timed.
    std::vector<double> visit, cut, encode;
    for (int b = 0; b < a.builds; ++b) {
      std::vector<hd::DigestCut> cuts;
      double v = 0, k = 0;
      for (const std::string& name : source.List(&error)) {
        hd::RankFile full;
        hd::RankFileBuilder builder(&full);
        auto t0 = Clock::now();
        source.Visit(name, 0, &builder, &error);
        v += Since(t0);
        t0 = Clock::now();
        cuts.push_back(hd::CutForDigest(full, {}));
        k += Since(t0);
      }
      std::vector<exporters::DigestRank> ranks;
      for (const hd::DigestCut& c : cuts) ranks.push_back({&c.file, hd::ProcessState::kRunning, 0});
      const auto t0 = Clock::now();
      const std::string bytes = exporters::EncodeNodeDigest({}, ranks);
      encode.push_back(Since(t0));
      visit.push_back(v);
      cut.push_back(k);
    }
    std::printf(
        "node: where it goes (medians): reading the rings into RankFiles %.1f ms, cutting "
        "%.1f ms, encoding %.2f ms\n",
        Summarize(visit).median * 1e3, Summarize(cut).median * 1e3, Summarize(encode).median * 1e3);
  }
  std::filesystem::remove_all(dir);
  return 0;
}

// --- serve: 512 exporters on loopback ports ---

std::atomic<bool> g_stop{false};
void OnSignal(int /*sig*/) {
  g_stop = true;
}

int Serve(const Args& a) {
  const auto t_init = Clock::now();
  SynthNodeJob job;
  std::string error;
  if (!job.Init(a.job, &error)) {
    std::fprintf(stderr, "digest_scale_bench: %s\n", error.c_str());
    return 2;
  }
  const int nodes = a.nodes > 0 ? std::min(a.nodes, job.nodes()) : job.nodes();
  std::printf("job: %d ranks on %d nodes of 8, simulated in %.1f s\n", job.nodes() * 8, nodes,
              Since(t_init));
  std::printf("culprit: missing rank %d on tp #%llu\n", job.culprit(),
              static_cast<unsigned long long>(job.culprit_seq()));
  std::fflush(stdout);
  std::vector<std::string> digests(static_cast<size_t>(nodes));
  std::vector<double> build_s, sizes;
  uint64_t records = 0, kept = 0;
  const auto t_gen = Clock::now();
  for (int n = 0; n < nodes; ++n) {
    const std::string dir = TempDir(a.dir, "serve");
    if (dir.empty() || !job.WriteNode(n, dir, &error)) {
      std::fprintf(stderr, "digest_scale_bench: node %d: %s\n", n,
                   dir.empty() ? "mkdtemp failed" : error.c_str());
      if (!dir.empty()) std::filesystem::remove_all(dir);
      return 2;
    }
    exporters::NodeDigestStats st;
    {
      exporters::DirRingSource source(dir);
      const NodeProbe probe(SynthNodeJob::Host(n));
      digests[static_cast<size_t>(n)] =
          exporters::BuildNodeDigest(&source, probe, job.now_wall_ns(), {}, &st);
    }
    std::filesystem::remove_all(dir);
    if (st.ranks != 8 || !st.unreadable.empty()) {
      std::fprintf(stderr, "digest_scale_bench: node %d: %zu ranks read\n", n, st.ranks);
      return 2;
    }
    build_s.push_back(st.build_s);
    sizes.push_back(static_cast<double>(st.bytes));
    records += st.records;
    kept += st.kept;
  }
  const Stats b = Summarize(build_s), s = Summarize(sizes);
  double total = 0;
  for (const double x : sizes) total += x;
  std::printf("generated %d nodes in %.1f s: %llu records in the rings, %llu kept in digests\n",
              nodes, Since(t_gen), static_cast<unsigned long long>(records),
              static_cast<unsigned long long>(kept));
  std::printf("digest bytes per node: median %.0f, max %.0f (min %.0f); all nodes %.2f MB\n",
              s.median, s.max, s.min, total / 1e6);
  std::printf("digest build per node (fresh source, 8 rings): median %.1f ms, p90 %.1f, max %.1f\n",
              b.median * 1e3, b.p90 * 1e3, b.max * 1e3);

  LoopbackHttpServer server;
  if (!server.Listen(&digests, &error)) {
    std::fprintf(stderr, "digest_scale_bench: %s\n", error.c_str());
    return 2;
  }
  const std::string tmp = a.hostfile + ".tmp";
  {
    std::ofstream out(tmp);
    out << "# digest_scale_bench serve: one exporter per simulated node\n";
    for (const int port : server.ports()) out << "127.0.0.1:" << port << "\n";
    if (!out) {
      std::fprintf(stderr, "digest_scale_bench: cannot write %s\n", tmp.c_str());
      return 2;
    }
  }
  std::filesystem::rename(tmp, a.hostfile);
  std::printf("serving %d digests on 127.0.0.1 (hostfile %s)\n", nodes, a.hostfile.c_str());
  std::fflush(stdout);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const uint64_t answers = server.Serve(&g_stop);
  std::printf("served %llu answers\n", static_cast<unsigned long long>(answers));
  return 0;
}

// --- correlate: the correlating instance's cycle ---

struct Cycle {
  double fetch = 0, decode = 0, index = 0, analyze = 0;
  double Total() const { return fetch + decode + index + analyze; }
};

int Correlate(const Args& a) {
  std::vector<exporters::DigestSource> sources;
  std::string error;
  if (!exporters::ExpandSources({a.from}, &sources, &error)) {
    std::fprintf(stderr, "digest_scale_bench: %s\n", error.c_str());
    return 2;
  }
  const auto probe = hd::MakeLinuxProcessProbe();
  std::vector<Cycle> cycles;
  std::vector<double> sizes;
  int failed = 0;
  for (int c = 0; c < a.cycles; ++c) {
    Cycle t;
    auto t0 = Clock::now();
    const std::vector<exporters::FetchedDigest> fetched =
        exporters::FetchDigests(sources, exporters::FetchOptions{});
    t.fetch = Since(t0);
    t0 = Clock::now();
    std::vector<hd::RankFile> files;
    std::vector<std::string> errors;
    double slowest = 0;
    size_t ok = 0;
    for (const exporters::FetchedDigest& d : fetched) {
      exporters::DecodedDigest decoded;
      std::string why;
      if (!d.ok) {
        errors.push_back(d.error);
        continue;
      }
      if (c == 0) sizes.push_back(static_cast<double>(d.bytes.size()));
      slowest = std::max(slowest, d.round_trip_s);
      if (!exporters::DecodeNodeDigest(d.bytes, d.source, d.received_at_ns, &decoded, &why)) {
        errors.push_back(why);
        continue;
      }
      ++ok;
      for (hd::RankFile& f : decoded.files) files.push_back(std::move(f));
    }
    t.decode = Since(t0);
    t0 = Clock::now();
    const size_t ranks = files.size();
    const hd::JobIndex index = hd::JobIndex::FromFiles(std::move(files), errors);
    t.index = Since(t0);
    t0 = Clock::now();
    hd::AnalyzeOptions o;
    o.now_wall_ns = trace::RealtimeNs();
    o.probe = probe.get();
    const hd::Analysis analysis = hd::Analyze(index, o);
    t.analyze = Since(t0);
    cycles.push_back(t);
    // The headline must be the injected fault: the culprit's missing tp collective.
    const hd::Verdict* head = analysis.verdicts.empty() ? nullptr : &analysis.verdicts[0];
    const bool right = head != nullptr && head->cls == hd::VerdictClass::kMissing &&
                       head->culprits == std::vector<int>{a.job.culprit} &&
                       head->comm_name == "tp" && head->seq == a.seq;
    std::printf(
        "cycle %d: %zu of %zu digests, %zu ranks, %llu records; fetch %.3f s (slowest "
        "transfer %.3f s), decode %.3f s, index %.3f s, analyze %.3f s; total %.3f s; "
        "load %s\n",
        c + 1, ok, sources.size(), ranks, static_cast<unsigned long long>(index.stats().records),
        t.fetch, slowest, t.decode, t.index, t.analyze, t.Total(), LoadAverage().c_str());
    if (head != nullptr) {
      std::printf("cycle %d: headline: %s %s %s #%llu, culprits", c + 1,
                  hd::VerdictClassName(head->cls), head->comm_name.c_str(), head->op.c_str(),
                  static_cast<unsigned long long>(head->seq));
      for (const int r : head->culprits) std::printf(" %d", r);
      std::printf(" (%s, %zu verdicts)\n", head->confirmed ? "confirmed" : "suspect",
                  analysis.verdicts.size());
    }
    if (!right) {
      ++failed;
      std::printf("cycle %d: FAILED: the headline is not 'missing, tp #%llu, culprit %d'\n", c + 1,
                  static_cast<unsigned long long>(a.seq), a.job.culprit);
      std::printf("%s", hd::RenderText(analysis, false).substr(0, 4000).c_str());
      for (size_t e = 0; e < std::min<size_t>(errors.size(), 5); ++e) {
        std::printf("  input: %s\n", errors[e].c_str());
      }
    }
  }
  std::vector<double> fetch, decode, index, analyze, total;
  for (const Cycle& t : cycles) {
    fetch.push_back(t.fetch);
    decode.push_back(t.decode);
    index.push_back(t.index);
    analyze.push_back(t.analyze);
    total.push_back(t.Total());
  }
  const Stats s = Summarize(sizes), tot = Summarize(total);
  std::printf("digest bytes fetched per node: median %.0f, max %.0f\n", s.median, s.max);
  std::printf(
      "per cycle (median of %d): fetch %.3f s, decode %.3f s, index %.3f s, analyze %.3f "
      "s; total median %.3f s, max %.3f s\n",
      a.cycles, Summarize(fetch).median, Summarize(decode).median, Summarize(index).median,
      Summarize(analyze).median, tot.median, tot.max);
  std::printf("correlating process: peak RSS %ld MiB, CPU %.2f s in all\n",
              StatusKib("VmHWM") / 1024, CpuS());
  std::printf("target: at most %.1f s per cycle: %s (median %.3f s)\n", a.target_s,
              tot.median <= a.target_s ? "MET" : "MISSED", tot.median);
  if (failed > 0) {
    std::printf("FAILED: %d of %d cycles did not name culprit %d\n", failed, a.cycles,
                a.job.culprit);
    return 1;
  }
  return tot.median <= a.target_s ? 0 : 3;
}

}  // namespace

int Main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: digest_scale_bench node [--ring N] [--records N] [--builds N] [--dir D]\n"
                 "       digest_scale_bench serve --hostfile PATH [--records N] [--ring N] "
                 "[--culprit R] [--hang-age S] [--dir D] [--nodes N]\n"
                 "       digest_scale_bench correlate --from HOSTFILE --culprit R --seq N "
                 "[--cycles N] [--target-s S]\n");
    return 2;
  }
  if (a.mode == "node") return Node(a);
  if (a.mode == "serve") return Serve(a);
  return Correlate(a);
}

}  // namespace ncclscope::bench

int main(int argc, char** argv) {
  return ncclscope::bench::Main(argc, argv);
}
