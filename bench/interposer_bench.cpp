// What libncclscope.so adds to one intercepted NCCL call (entry point + record into the ring, no
// device completion tracking), measured against calling the next library directly, in one run.
// The next library is bench/fake_nccl.cpp, whose calls return at once, so the difference is ours.
//   direct: pncclX through the PLT into the fake, exactly the call an application makes to libnccl.
//   on/off: ncclX of the real libncclscope.so, which forwards to the fake's pncclX.
// The process first runs with recording on, then re-executes itself with NCCLSCOPE_ENABLE=0 (the
// switch is read once per process) to measure the off path; each process measures its own
// baseline. Each prints "summary" lines with the medians and their difference.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/ring_reader.h"

namespace {

constexpr int kThreads = 4;
ncclComm_t g_comms[kThreads];  // one per thread in the multi-threaded case
float g_buf[16];
const auto kStream = reinterpret_cast<cudaStream_t>(0x1);

// The two call paths share one body; only the function called differs.
struct Direct {
  static ncclResult_t AllReduce(ncclComm_t c) {
    return pncclAllReduce(g_buf, g_buf, 16, ncclFloat32, ncclSum, c, kStream);
  }
  static ncclResult_t Send(ncclComm_t c) {
    return pncclSend(g_buf, 16, ncclFloat32, 1, c, kStream);
  }
  static ncclResult_t Recv(ncclComm_t c) {
    return pncclRecv(g_buf, 16, ncclFloat32, 1, c, kStream);
  }
  static ncclResult_t GroupStart() { return pncclGroupStart(); }
  static ncclResult_t GroupEnd() { return pncclGroupEnd(); }
};
struct Probe {
  static ncclResult_t AllReduce(ncclComm_t c) {
    return ncclAllReduce(g_buf, g_buf, 16, ncclFloat32, ncclSum, c, kStream);
  }
  static ncclResult_t Send(ncclComm_t c) { return ncclSend(g_buf, 16, ncclFloat32, 1, c, kStream); }
  static ncclResult_t Recv(ncclComm_t c) { return ncclRecv(g_buf, 16, ncclFloat32, 1, c, kStream); }
  static ncclResult_t GroupStart() { return ncclGroupStart(); }
  static ncclResult_t GroupEnd() { return ncclGroupEnd(); }
};

template <typename Api>
void AllReduce(benchmark::State& state) {
  ncclComm_t comm = g_comms[state.thread_index() % kThreads];
  for (auto _ : state) benchmark::DoNotOptimize(Api::AllReduce(comm));
}

template <typename Api>
void Send(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Api::Send(g_comms[0]));
}

// One iteration is a whole group: GroupStart, Send, Recv, GroupEnd (4 calls).
template <typename Api>
void GroupSendRecv(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(Api::GroupStart());
    benchmark::DoNotOptimize(Api::Send(g_comms[0]));
    benchmark::DoNotOptimize(Api::Recv(g_comms[0]));
    benchmark::DoNotOptimize(Api::GroupEnd());
  }
}

void Register(const char* mode) {
  struct Case {
    const char* name;
    void (*direct)(benchmark::State&);
    void (*probe)(benchmark::State&);
    int threads;
  };
  const Case cases[] = {
      {"AllReduce", AllReduce<Direct>, AllReduce<Probe>, 1},
      {"Send", Send<Direct>, Send<Probe>, 1},
      {"GroupSendRecv", GroupSendRecv<Direct>, GroupSendRecv<Probe>, 1},
      {"AllReduce4T", AllReduce<Direct>, AllReduce<Probe>, kThreads},
  };
  for (const Case& c : cases) {
    // CPU time per call: with 4 threads on 2 cores, wall time would count time spent descheduled,
    // while cache-line contention between threads shows up as CPU time.
    benchmark::RegisterBenchmark((std::string(c.name) + "/direct").c_str(), c.direct)
        ->Threads(c.threads)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((std::string(c.name) + "/" + mode).c_str(), c.probe)
        ->Threads(c.threads)
        ->Unit(benchmark::kNanosecond);
  }
}

// Console output as usual, plus the median CPU time of each benchmark for the summary lines.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  // A reporter passed in does not get --benchmark_color applied: colour only on a terminal, so the
  // summary lines stay parseable in a pipe.
  SummaryReporter() : ConsoleReporter(isatty(STDOUT_FILENO) != 0 ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.aggregate_name == "median") medians_[r.run_name.function_name] = r.GetAdjustedCPUTime();
    }
  }

  // "summary mode=on case=AllReduce calls=1 direct_ns=.. probe_ns=.. added_ns=.. ratio=..", parsed
  // by run_interposer_bench.sh. Nothing is printed without --benchmark_repetitions (no medians).
  void PrintSummary(const std::string& mode) const {
    const std::pair<const char*, int> cases[] = {
        {"AllReduce", 1}, {"Send", 1}, {"GroupSendRecv", 4}, {"AllReduce4T", 1}};
    for (const auto& [name, calls] : cases) {
      auto d = medians_.find(std::string(name) + "/direct");
      auto p = medians_.find(std::string(name) + "/" + mode);
      if (d == medians_.end() || p == medians_.end()) continue;
      std::printf(
          "summary mode=%s case=%s calls=%d direct_ns=%.2f probe_ns=%.2f added_ns=%.2f "
          "ratio=%.2f\n",
          mode.c_str(), name, calls, d->second, p->second, p->second - d->second,
          p->second / d->second);
    }
  }

 private:
  std::map<std::string, double> medians_;
};

bool Setup() {
  // Measure the shipped library, not something else that happens to define ncclAllReduce.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ncclAllReduce), &info) == 0 ||
      std::strstr(info.dli_fname, "libncclscope") == nullptr) {
    std::fprintf(stderr, "ncclAllReduce does not come from libncclscope.so\n");
    return false;
  }
  // Through the probe, so it knows the communicators and the calls on them take the full path.
  for (ncclComm_t& comm : g_comms) {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess) {
      std::fprintf(stderr, "communicator setup failed\n");
      return false;
    }
  }
  return true;
}

// In the "on" run the ring must hold records of known communicators, or the numbers measured
// some other path (recording disabled, lookups missing).
bool CheckRing(const std::string& dir) {
  std::string error;
  const std::vector<std::string> files = ncclscope::trace::ListRingFiles(dir, &error);
  if (files.size() != 1) {
    std::fprintf(stderr, "expected one ring file in %s, found %zu %s\n", dir.c_str(), files.size(),
                 error.c_str());
    return false;
  }
  const auto ring = ncclscope::trace::ReadRingFile(files[0], &error);
  if (!ring || ring->write_pos < 1000 || ring->unknown_comm_records != 0) {
    std::fprintf(stderr, "ring check failed: %s\n", error.c_str());
    return false;
  }
  std::printf("ring: %llu records written, %llu on unknown communicators\n",
              static_cast<unsigned long long>(ring->write_pos),
              static_cast<unsigned long long>(ring->unknown_comm_records));
  return true;
}

// The off measurement: this program again with NCCLSCOPE_ENABLE=0. Returns its exit status.
int RunOffChild(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("NCCLSCOPE_ENABLE", "0", 1);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);  // Initialize consumes the flags
  const char* enable = std::getenv("NCCLSCOPE_ENABLE");
  const std::string mode = enable != nullptr && std::strcmp(enable, "0") == 0 ? "off" : "on";

  // Before the first NCCL call: the probe reads its configuration once, at that call.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir_template =
      std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/ncclscope-bench-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  setenv("NCCLSCOPE_DIR", dir.c_str(), 1);
  setenv("NCCLSCOPE_TRACK_COMPLETION", "0", 1);

  bool ok = Setup();
  if (ok) {
    Register(mode.c_str());
    benchmark::Initialize(&argc, argv);
    SummaryReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    reporter.PrintSummary(mode);
    if (mode == "on") ok = CheckRing(dir);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!ok) return 1;
  return mode == "on" ? RunOffChild(args) : 0;
}
