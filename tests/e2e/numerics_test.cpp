// NCCLSCOPE_NUMERICS end to end: real multi-process jobs on the emulator with the
// probe preloaded, the numerics faults of sim/scenarios (a NaN fed into one rank's input that then
// spreads as a real NaN does, one flipped output bit, a sustained corrupter), then the real
// `ncclscope analyze`. The culprit must be named at the sampling periods that catch the fault; a
// period that misses the poisoned collective must say the origin was not sampled, never blame a
// victim; a flip no sample saw gives no verdict; and healthy jobs with every collective checked
// give no numerics verdict and unchanged results (the rank runner checks every output).
//
// Where the faults land (the scenarios run one world communicator, ops counted from seq 1):
//   numerics-nan        3 collectives per step; rank 5's allreduce of step 3 is seq 10, and from
//                       there every rank's later inputs hold NaN
//   numerics-flip       rank 2's allreduce of step 2 is seq 7
//   numerics-corrupter  2 collectives per step; rank 6 corrupts seq 3, 6, 9, 12
// Sampling takes seq 1, 1 + N, 1 + 2N, ... (every rank the same).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

struct Job {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json members
  ProcessResult sim;
  nlohmann::json analysis;
};

Job RunChecked(const std::string& scenario, int ranks, const std::string& mode, int every) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  Job job;
  job.sim = RunSim(scenario + ".json", ranks, dir, 60,
                   {{"NCCLSCOPE_NUMERICS", mode},
                    {"NCCLSCOPE_NUMERICS_EVERY", std::to_string(every)},
                    // These jobs end in seconds; the watchdog's own report is tested apart.
                    {"NCCLSCOPE_WATCHDOG", "0"}});
  const ProcessResult a = RunProcess({Cli(), "analyze", "--json", "--job-ended", dir}, {}, 60);
  try {
    job.analysis = nlohmann::json::parse(a.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "analyze printed no JSON: " << e.what() << "\n" << a.out << a.err;
  }
  return job;
}

std::vector<nlohmann::json> VerdictsOf(const Job& job, const std::string& cls) {
  std::vector<nlohmann::json> out;
  if (!job.analysis.contains("verdicts")) return out;
  for (const auto& v : job.analysis["verdicts"]) {
    if (v.value("class", "") == cls) out.push_back(v);
  }
  return out;
}

std::vector<int> Culprits(const nlohmann::json& v) {
  return v.value("culprits", std::vector<int>{});
}

bool FinishedCorrectly(const Job& job, int ranks) {
  return job.sim.exit_code == 0 &&
         job.sim.out.find("all " + std::to_string(ranks) + " ranks finished") != std::string::npos;
}

struct NumericsCase {
  int ranks;
  int every;
};

std::string CaseName(const ::testing::TestParamInfo<NumericsCase>& info) {
  return std::to_string(info.param.ranks) + "ranks_every" + std::to_string(info.param.every);
}

// Periods 1 and 3 sample seq 10, where only rank 5's input holds the NaN.
class NanOriginSampled : public ::testing::TestWithParam<NumericsCase> {};

TEST_P(NanOriginSampled, NamesTheRankThatFedTheNanNotTheRanksItSpreadTo) {
  const Job job = RunChecked("numerics-nan", GetParam().ranks, "nan", GetParam().every);
  EXPECT_TRUE(FinishedCorrectly(job, GetParam().ranks)) << job.sim.out << job.sim.err;
  const auto v = VerdictsOf(job, "nan-origin");
  ASSERT_EQ(v.size(), 1u) << job.analysis.dump(2);
  EXPECT_EQ(v[0].value("comm_name", ""), "world");
  EXPECT_EQ(v[0].value("op", ""), "allreduce");
  EXPECT_EQ(v[0].value("seq", uint64_t{0}), 10u);
  EXPECT_EQ(Culprits(v[0]), std::vector<int>{5}) << v[0].dump(2);
  // A job computing NaNs is no hang: the first verdict is the numerics one.
  EXPECT_EQ(job.analysis["verdicts"][0].value("class", ""), "nan-origin");
}

INSTANTIATE_TEST_SUITE_P(Periods, NanOriginSampled,
                         ::testing::Values(NumericsCase{8, 1}, NumericsCase{8, 3},
                                           NumericsCase{32, 3}),
                         CaseName);

// Periods 2 (seq 9 clean, 11 poisoned everywhere) and 4 (9 clean, 13 poisoned everywhere) miss
// seq 10: nobody may be blamed.
class NanOriginMissed : public ::testing::TestWithParam<NumericsCase> {};

TEST_P(NanOriginMissed, SaysTheOriginWasNotSampledAndBlamesNobody) {
  const Job job = RunChecked("numerics-nan", GetParam().ranks, "nan", GetParam().every);
  EXPECT_TRUE(FinishedCorrectly(job, GetParam().ranks)) << job.sim.out << job.sim.err;
  const auto v = VerdictsOf(job, "nan-origin");
  ASSERT_EQ(v.size(), 1u) << job.analysis.dump(2);
  EXPECT_TRUE(Culprits(v[0]).empty()) << v[0].dump(2);
  const std::string summary = v[0].value("summary", "");
  EXPECT_NE(summary.find("not sampled"), std::string::npos) << summary;
  EXPECT_NE(summary.find("#9"), std::string::npos) << "the last clean sample: " << summary;
}

INSTANTIATE_TEST_SUITE_P(Periods, NanOriginMissed,
                         ::testing::Values(NumericsCase{8, 2}, NumericsCase{8, 4},
                                           NumericsCase{32, 2}),
                         CaseName);

// Periods 1 and 2 sample seq 7, rank 2's flipped allreduce.
class CorruptOutputSampled : public ::testing::TestWithParam<NumericsCase> {};

TEST_P(CorruptOutputSampled, NamesTheRankWhoseOutputDiffers) {
  const Job job = RunChecked("numerics-flip", GetParam().ranks, "checksum", GetParam().every);
  EXPECT_EQ(job.sim.exit_code, 0) << job.sim.out << job.sim.err;
  const auto v = VerdictsOf(job, "corrupt-output");
  ASSERT_EQ(v.size(), 1u) << job.analysis.dump(2);
  EXPECT_EQ(v[0].value("op", ""), "allreduce");
  EXPECT_EQ(v[0].value("seq", uint64_t{0}), 7u);
  EXPECT_EQ(Culprits(v[0]), std::vector<int>{2}) << v[0].dump(2);
  EXPECT_FALSE(v[0].value("tie", false));
}

INSTANTIATE_TEST_SUITE_P(Periods, CorruptOutputSampled,
                         ::testing::Values(NumericsCase{8, 1}, NumericsCase{32, 2}), CaseName);

TEST(CorruptOutput, AFlipNoSampleSawGivesNoVerdict) {
  const Job job = RunChecked("numerics-flip", 8, "checksum", 4);  // 1, 5, 9, 13: not 7
  EXPECT_EQ(job.sim.exit_code, 0) << job.sim.out << job.sim.err;
  EXPECT_TRUE(VerdictsOf(job, "corrupt-output").empty()) << job.analysis.dump(2);
  EXPECT_EQ(job.analysis["verdicts"][0].value("class", ""), "healthy") << job.analysis.dump(2);
}

class SustainedCorrupter : public ::testing::TestWithParam<NumericsCase> {};

TEST_P(SustainedCorrupter, IsNamedOnceWithEveryIncident) {
  const Job job = RunChecked("numerics-corrupter", GetParam().ranks, "all", GetParam().every);
  EXPECT_EQ(job.sim.exit_code, 0) << job.sim.out << job.sim.err;
  const auto v = VerdictsOf(job, "corrupt-output");
  ASSERT_EQ(v.size(), 1u) << job.analysis.dump(2);
  EXPECT_EQ(Culprits(v[0]), std::vector<int>{6}) << v[0].dump(2);
  // Incidents at 3, 6, 9 and 12 (of the 12 collectives): all of them count.
  const std::string summary = v[0].value("summary", "");
  EXPECT_NE(summary.find("4 incidents"), std::string::npos) << summary;
  EXPECT_TRUE(VerdictsOf(job, "nan-origin").empty()) << job.analysis.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Periods, SustainedCorrupter,
                         ::testing::Values(NumericsCase{8, 1}, NumericsCase{32, 1}), CaseName);

// What a user reads in `ncclscope dump`: every rank samples the same collectives (1, 1 + N, ...
// of each communicator, counting every collective), and the outputs NCCL makes identical hash
// alike on every rank; nothing was skipped. With the mode off nothing is sampled.
TEST(NumericsRecords, EveryRankSamplesTheSameCollectivesAndIdenticalOutputsHashAlike) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim =
      RunSim("healthy.json", 8, dir, 60,
             {{"NCCLSCOPE_NUMERICS", "all"}, {"NCCLSCOPE_NUMERICS_EVERY", "3"}});
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  std::map<std::pair<std::string, uint64_t>, std::set<std::string>> hashes;  // (comm, seq)
  std::map<std::string, std::set<int>> samplers;                             // "comm#seq" -> ranks
  for (const auto& [rank, dump] : DumpJson(dir)) {
    EXPECT_EQ(dump.header.value("numerics_skipped", -1), 0) << "rank " << rank;
    ASSERT_FALSE(dump.numerics.empty()) << "rank " << rank;
    for (const auto& n : dump.numerics) {
      const auto seq = n.value("seq", uint64_t{0});
      EXPECT_EQ((seq - 1) % 3, 0u) << n.dump();
      // Scanned where this rank's input is read and can hold NaN (not a broadcast's non-root,
      // not integers): then clean.
      if (n.contains("input_nan")) {
        EXPECT_EQ(n.value("input_nan", -1), 0) << n.dump();
        EXPECT_EQ(n.value("input_inf", -1), 0) << n.dump();
      }
      const std::string comm = n.value("comm_id", "");
      samplers[comm + "#" + std::to_string(seq)].insert(rank);
      const std::string op = n.value("operation", "");
      if (op == "allreduce" || op == "allgather" || op == "broadcast") {
        hashes[{comm, seq}].insert(n.value("output_hash", ""));
      }
    }
  }
  ASSERT_FALSE(hashes.empty());
  for (const auto& [key, distinct] : hashes) {
    EXPECT_EQ(distinct.size(), 1u) << key.first << " #" << key.second;
  }
  // Every member of a communicator samples its collective (the world's: all 8 ranks).
  size_t world_like = 0;
  for (const auto& [key, ranks] : samplers) world_like += ranks.size() == 8 ? 1 : 0;
  EXPECT_GT(world_like, 0u);

  const std::string off_dir = scratch / "off";
  ASSERT_EQ(RunSim("healthy.json", 8, off_dir, 60).exit_code, 0);
  for (const auto& [rank, dump] : DumpJson(off_dir)) {
    EXPECT_TRUE(dump.numerics.empty()) << "rank " << rank;
  }
}

// A collective captured into a CUDA graph runs at every replay, long after the probe's slot is
// reused: the probe leaves it unsampled and counts it skipped, the uncaptured ones are sampled.
TEST(NumericsRecords, CollectivesUnderStreamCaptureAreSkippedNotSampled) {
  ScratchDir scratch;
  const std::string scenario = scratch / "captured.json";
  std::ofstream(scenario) << R"({"name": "captured", "seed": 2, "repeat": 3, "steps": [{"ops": [
    {"op": "allreduce", "count": 1024, "dtype": "float32"},
    {"op": "allreduce", "count": 1024, "dtype": "float32", "captured": true}]}]})";
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "4", "--scenario", scenario, "--dir", dir, "--timeout", "60"},
      {{"NCCLSCOPE_NUMERICS", "all"}, {"NCCLSCOPE_NUMERICS_EVERY", "1"}}, 120);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  for (const auto& [rank, dump] : DumpJson(dir)) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(dump.header.value("numerics_skipped", -1), 3);  // one captured call an iteration
    std::set<uint64_t> sampled;
    for (const auto& n : dump.numerics) sampled.insert(n.value("seq", uint64_t{0}));
    EXPECT_EQ(sampled, (std::set<uint64_t>{1, 3, 5})) << "the uncaptured calls, every one";
  }
}

TEST(NumericsHealthy, EveryCollectiveCheckedGivesNoNumericsVerdictAndUnchangedResults) {
  for (const char* scenario : {"healthy", "healthy-jitter"}) {
    const Job job = RunChecked(scenario, 8, "all", 1);
    EXPECT_TRUE(FinishedCorrectly(job, 8)) << scenario << "\n" << job.sim.out << job.sim.err;
    EXPECT_TRUE(VerdictsOf(job, "nan-origin").empty()) << scenario << job.analysis.dump(2);
    EXPECT_TRUE(VerdictsOf(job, "corrupt-output").empty()) << scenario << job.analysis.dump(2);
    EXPECT_EQ(job.analysis["verdicts"][0].value("class", ""), "healthy") << scenario;
  }
}

// The in-process watchdog reports a numerics verdict while the job runs, without a hang, once for
// the whole node: numerics-nan stretched to a few seconds so the job outlives the watchdog's look
// (about a second after the first poisoned record).
TEST(NumericsWatchdog, ReportsTheNanOriginOnceWhileTheJobRuns) {
  ScratchDir scratch;
  std::ifstream in(ScenarioPath("numerics-nan.json"));
  nlohmann::json scenario = nlohmann::json::parse(in);
  scenario["repeat"] = 40;
  scenario["compute"]["ms"] = 100;
  const std::string file = scratch / "numerics-nan-long.json";
  std::ofstream(file) << scenario.dump();
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "8", "--scenario", file, "--dir", dir, "--timeout", "60"},
      {{"NCCLSCOPE_RING_RECORDS", "4096"},
       {"NCCLSCOPE_NUMERICS", "nan"},
       {"NCCLSCOPE_NUMERICS_EVERY", "1"}},
      90);
  EXPECT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  const std::string all = sim.out + sim.err;
  size_t reports = 0;
  for (size_t at = all.find("nan-origin"); at != std::string::npos;
       at = all.find("nan-origin", at + 1)) {
    ++reports;
  }
  EXPECT_EQ(reports, 1u) << all;
  EXPECT_NE(all.find("watchdog of rank"), std::string::npos) << all;
  std::ifstream verdict(dir + "/verdict.json");
  ASSERT_TRUE(verdict.good()) << "no verdict.json in " << dir;
  const nlohmann::json v = nlohmann::json::parse(verdict);
  bool named = false;
  for (const auto& one : v["verdicts"]) {
    if (one.value("class", "") == "nan-origin") named = Culprits(one) == std::vector<int>{5};
  }
  EXPECT_TRUE(named) << v.dump(2);
}

}  // namespace
}  // namespace ncclscope::testing
