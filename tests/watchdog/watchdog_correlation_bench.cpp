// watchdog_correlation_bench: what one correlation of the in-process watchdog costs on a node of 8
// ranks with full rings of the default size (NCCLSCOPE_RING_RECORDS = 65536), before and after the
// watchdog read through the compact, caching reader (docs/performance.md, "What the watchdog
// costs").
//
// A writer process creates the 8 rings of a hung job (hung_rings.h: 1.25 laps of completed
// allreduces, then 7 ranks wait for rank 2) and keeps beating their heartbeats. Each measurement
// runs in a fresh child of this program, so its peak RSS is its own:
//   before   trace::ReadTraceDir + Analyze(TraceSet), what every stalled rank ran at every look
//   first    RingCache::Index (every file read and compacted, one thread) + Analyze(JobIndex)
//   cached   the same after a first look, when only heartbeats moved: the later looks of an
//   incident
// Usage: watchdog_correlation_bench [DIR] [--records N] [--repeat N]
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/incident/incident_files.h"
#include "hang_detector/incident/incident_key.h"
#include "hang_detector/incident/incident_record.h"
#include "plugin/watchdog/node_lock.h"
#include "plugin/watchdog/ring_cache.h"
#include "tests/watchdog/hung_rings.h"
#include "trace/clock.h"
#include "trace/trace_set.h"

namespace {

namespace hd = ncclscope::hang_detector;
namespace tr = ncclscope::trace;
namespace pl = ncclscope::plugin;
using pl::RingCache;

constexpr const char* kJob = "bench";

struct Sample {
  double wall_s = 0;
  double cpu_s = 0;
  long peak_kib = 0;  // the child's peak RSS
  long base_kib = 0;  // its RSS before the correlation
  long held_kib = 0;  // its RSS after it, less before the first look: what stays between looks
  char verdict[96] = {};
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

long RssKib() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

long PeakKib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

hd::AnalyzeOptions Options() {
  // As the watchdog sets them (watchdog_decide.cpp) at its default stall threshold.
  hd::AnalyzeOptions o;
  o.now_wall_ns = tr::RealtimeNs();
  o.stall_s = 2.0;
  o.stale_s = 10.0;
  return o;
}

void Describe(const hd::Analysis& a, Sample* s) {
  if (a.verdicts.empty()) return;
  const hd::Verdict& v = a.verdicts.front();
  std::snprintf(s->verdict, sizeof s->verdict, "%s rank %d, %d files", hd::VerdictClassName(v.cls),
                v.culprits.empty() ? -1 : v.culprits[0], a.input.files);
}

// One measurement, in this (child) process.
Sample Measure(const std::string& dir, const std::string& mode) {
  Sample s;
  const long start_kib = RssKib();
  RingCache cache;
  std::vector<std::string> notes;
  std::string error;
  if (mode == "cached" && !cache.Index(dir, kJob, &notes, &error)) std::exit(3);
  s.base_kib = PeakKib();
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  if (mode == "follow") {
    const std::string lock = hd::NodeLockPath(dir, hd::JobKey(kJob));
    for (int i = 0; i < 1000; ++i) {
      pl::NodeLock l;
      if (l.TryAcquire(lock, 1, &error) != pl::NodeLock::Result::kOther ||
          !hd::ReadIncidentRecord(dir, hd::JobKey(kJob), 0, &error)) {
        std::exit(3);
      }
    }
    std::snprintf(s.verdict, sizeof s.verdict, "per tick: x 1/1000");
  } else if (mode == "before") {
    tr::TraceSet set;
    if (!tr::ReadTraceDir(dir, &set, &error)) std::exit(3);
    set.job = kJob;
    Describe(hd::Analyze(set, Options()), &s);
  } else {
    const auto index = cache.Index(dir, kJob, &notes, &error);
    if (!index) std::exit(3);
    Describe(hd::Analyze(*index, Options()), &s);
  }
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.cpu_s = CpuSeconds() - cpu0;
  s.peak_kib = PeakKib();
  s.held_kib = RssKib() - start_kib;
  return s;
}

Sample MeasureInChild(const std::string& dir, const std::string& mode) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(2);
  const pid_t pid = fork();
  if (pid == 0) {
    const Sample s = Measure(dir, mode);
    if (write(fds[1], &s, sizeof s) != static_cast<ssize_t>(sizeof s)) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  Sample s;
  const bool ok = read(fds[0], &s, sizeof s) == static_cast<ssize_t>(sizeof s);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "the %s measurement failed\n", mode.c_str());
    std::exit(1);
  }
  return s;
}

// Writes the job, then beats its heartbeats until killed: the rings' writer is alive, as in a
// hung job. Returns its pid once the files are complete.
pid_t StartWriter(const std::string& dir, uint64_t records) {
  int ready[2];
  if (pipe(ready) != 0) std::exit(2);
  const pid_t pid = fork();
  if (pid == 0) {
    ncclscope::testing::HungJobOptions o;
    o.capacity = records;
    o.job = kJob;
    ncclscope::testing::HungJob job;
    std::string error;
    if (!ncclscope::testing::WriteHungJob(dir, o, &job, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      _exit(2);
    }
    if (write(ready[1], "y", 1) != 1) _exit(2);
    while (true) {
      for (auto& w : job.writers) w->Heartbeat(tr::MonotonicNs());
      usleep(100'000);
    }
  }
  close(ready[1]);
  char c = 0;
  if (read(ready[0], &c, 1) != 1) {
    std::fprintf(stderr, "the writer failed\n");
    std::exit(1);
  }
  close(ready[0]);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  uint64_t records = 65536;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--records") == 0 && i + 1 < argc) {
      records = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (argv[i][0] != '-') {
      dir = argv[i];
    } else {
      std::fprintf(stderr, "usage: watchdog_correlation_bench [DIR] [--records N] [--repeat N]\n");
      return 2;
    }
  }
  char tmpl[] = "/tmp/ncclscope-wd-bench-XXXXXX";
  const bool own_dir = dir.empty();
  if (own_dir) dir = mkdtemp(tmpl);
  const pid_t writer = StartWriter(dir, records);
  // The decider's side for "follow": the lock held here and a record of a confirmed hang.
  pl::NodeLock held;
  std::string error;
  if (held.TryAcquire(hd::NodeLockPath(dir, hd::JobKey(kJob)), 0, &error) !=
      pl::NodeLock::Result::kHeld) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  hd::IncidentRecord d;
  d.job = hd::JobKey(kJob);
  d.job_id = kJob;
  d.holder_pid = static_cast<int>(getpid());
  d.holder_rank = 0;
  d.written_wall_ns = d.onset_wall_ns = d.confirmed_wall_ns = tr::RealtimeNs();
  d.passes = 1;
  d.stage = hd::IncidentStage::kHang;
  d.how = hd::ConfirmedHow::kTime;
  d.hang_comms = {0x5eed000000000001ULL};
  d.waits = {{0x5eed000000000001ULL, {0, 1, 3, 4, 5, 6, 7}}};
  if (!hd::WriteFileAtomically(dir, hd::IncidentRecordName(d.job), hd::RenderIncident(d), &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::printf("8 ranks, rings of %llu records (%.2f laps written), %s\n",
              static_cast<unsigned long long>(records), 1.25, dir.c_str());
  std::printf("%-7s %8s %8s %10s %10s %10s  %s\n", "mode", "wall s", "cpu s", "peak MiB",
              "added MiB", "held MiB", "headline");
  for (const char* mode : {"before", "first", "cached", "follow"}) {
    for (int r = 0; r < repeat; ++r) {
      const Sample s = MeasureInChild(dir, mode);
      std::printf("%-7s %8.3f %8.3f %10.1f %10.1f %10.1f  %s\n", mode, s.wall_s, s.cpu_s,
                  static_cast<double>(s.peak_kib) / 1024,
                  static_cast<double>(s.peak_kib - s.base_kib) / 1024,
                  static_cast<double>(s.held_kib) / 1024, s.verdict);
    }
  }
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  if (own_dir) std::filesystem::remove_all(dir);
  return 0;
}
