// Runs a function as N forked ranks of one emulated job, with a deadline, and collects what each
// rank reported. Every run gets its own NCCLSIM_JOB_TAG and its shared memory is removed after.
#pragma once

#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

namespace ncclsim_test {

struct RankOutcome {
  int exit_code = -1;      // -1 when killed
  bool timed_out = false;  // still running at the deadline (then killed)
  std::string report;      // lines the rank reported with rankReport
};

// fn runs in each child; its return value is the exit code (0 = pass).
using RankFn = std::function<int(int rank, int nranks, const ncclUniqueId& id)>;

// Forks nranks children, waits at most timeout_ms for all, kills stragglers. Not thread-safe.
std::vector<RankOutcome> runRanks(int nranks, const RankFn& fn, int timeout_ms);

// In a child: appends one line to this rank's report (shown by the parent on failure).
void rankReport(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// gtest-friendly summary: "" when every rank exited 0 in time, else one line per bad rank.
std::string describeFailures(const std::vector<RankOutcome>& out);

// Runs body in one rank process of its own (the emulator's state is per process); a nonzero
// return or a crash fails the calling test.
void runInOneRank(int (*body)());

// Fails the calling test with every rank's failure, when one failed.
void expectAllPass(const std::vector<RankOutcome>& out);

}  // namespace ncclsim_test
