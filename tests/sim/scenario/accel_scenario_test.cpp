// The scenario's "accel" key (NCCLSCOPE_ACCEL and its settings for every rank of `ncclscope sim`)
// and the faults of the emulated driver that its set-up meets (ipc_open_fails,
// device_memory_limit): what parses, what every bad value says (file, JSON path, problem),
// which variables the ranks get, that the user's environment wins, and that the ranges checked
// here are the probe's own (plugin/core/config_table.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/accel_env.h"
#include "sim/scenario/accel_limits.h"
#include "sim/scenario/comm_layout.h"
#include "sim/scenario/launcher.h"
#include "sim/scenario/launcher_env.h"
#include "sim/scenario/rank_faults.h"
#include "tests/sim/scenario/env_lookup.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

using testing::lookup;
using testing::parse;
using testing::parseError;

std::string withAccel(const std::string& accel) {
  return R"({"accel": )" + accel + R"(, "steps": [{"ops": [{"op": "allreduce", "count": 8}]}]})";
}

TEST(AccelKey, ParsesEveryMemberAndItsSizeSyntax) {
  const Scenario s = parse(withAccel(R"({"enabled": true, "buffer": "1m", "timeout_ms": 5000})"));
  ASSERT_TRUE(s.accel);
  EXPECT_TRUE(s.accel->enabled);
  EXPECT_EQ(s.accel->buffer_bytes, 1048576u);
  EXPECT_EQ(s.accel->timeout_ms, 5000);
  // The probe's size syntax: bytes, or k, m, g (binary, any case); a number is bytes too.
  EXPECT_EQ(parse(withAccel(R"({"buffer": "64k"})")).accel->buffer_bytes, 65536u);
  EXPECT_EQ(parse(withAccel(R"({"buffer": "1G"})")).accel->buffer_bytes, 1073741824u);
  EXPECT_EQ(parse(withAccel(R"({"buffer": "100000"})")).accel->buffer_bytes, 100000u);
  EXPECT_EQ(parse(withAccel(R"({"buffer": 2097152})")).accel->buffer_bytes, 2097152u);
}

TEST(AccelKey, AnEmptyObjectEnablesWithTheProbesDefaultsAndNoKeyLeavesTheEnvironmentAlone) {
  const Scenario on = parse(withAccel("{}"));
  ASSERT_TRUE(on.accel);
  EXPECT_TRUE(on.accel->enabled);
  EXPECT_FALSE(on.accel->buffer_bytes);
  EXPECT_FALSE(on.accel->timeout_ms);
  EXPECT_FALSE(parse(withAccel(R"({"enabled": false})")).accel->enabled);
  EXPECT_FALSE(parse(R"({"steps": [{"ops": []}]})").accel);
}

struct BadAccel {
  const char* accel;
  const char* want;  // "test.json: PATH: MESSAGE"
};

class AccelKeyErrors : public ::testing::TestWithParam<BadAccel> {};

TEST_P(AccelKeyErrors, NameTheFileTheKeyAndTheProblem) {
  EXPECT_EQ(parseError(withAccel(GetParam().accel)), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Values, AccelKeyErrors,
    ::testing::Values(
        BadAccel{"true", "test.json: accel: expected an object, got boolean"},
        BadAccel{R"({"buffers": "1m"})",
                 "test.json: accel.buffers: unknown key (allowed here: enabled, buffer, "
                 "timeout_ms)"},
        BadAccel{R"({"enabled": "yes"})",
                 "test.json: accel.enabled: expected true or false, got "
                 "string"},
        BadAccel{R"({"buffer": "1x"})",
                 "test.json: accel.buffer: '1x' is not a size (bytes, or a whole number with k, m "
                 "or g: \"16m\")"},
        BadAccel{R"({"buffer": "1.5m"})",
                 "test.json: accel.buffer: '1.5m' is not a size (bytes, or a whole number with k, "
                 "m or g: \"16m\")"},
        BadAccel{R"({"buffer": "-1"})",
                 "test.json: accel.buffer: '-1' is not a size (bytes, or a whole number with k, m "
                 "or g: \"16m\")"},
        BadAccel{R"({"buffer": "m"})",
                 "test.json: accel.buffer: 'm' is not a size (bytes, or a whole number with k, m "
                 "or g: \"16m\")"},
        BadAccel{R"({"buffer": "99999999999999999999k"})",
                 "test.json: accel.buffer: '99999999999999999999k' is not a size (bytes, or a "
                 "whole number with k, m or g: \"16m\")"},
        BadAccel{R"({"buffer": "17179869184g"})",
                 "test.json: accel.buffer: '17179869184g' is not a size (bytes, or a whole number "
                 "with k, m or g: \"16m\")"},
        BadAccel{R"({"buffer": "32k"})",
                 "test.json: accel.buffer: 32768 bytes is out of range [65536, 1073741824] "
                 "(NCCLSCOPE_ACCEL_BUFFER's)"},
        BadAccel{R"({"buffer": "2g"})",
                 "test.json: accel.buffer: 2147483648 bytes is out of range [65536, 1073741824] "
                 "(NCCLSCOPE_ACCEL_BUFFER's)"},
        BadAccel{R"({"buffer": -5})",
                 "test.json: accel.buffer: -5 is out of range [0, "
                 "9223372036854775807]"},
        BadAccel{R"({"buffer": 1.5})", "test.json: accel.buffer: expected an integer, got 1.5"},
        BadAccel{R"({"timeout_ms": 99})",
                 "test.json: accel.timeout_ms: 99 is out of range [100, 3600000]"},
        BadAccel{R"({"timeout_ms": 3600001})",
                 "test.json: accel.timeout_ms: 3600001 is out of range [100, 3600000]"},
        BadAccel{R"({"timeout_ms": "5000"})",
                 "test.json: accel.timeout_ms: expected an integer, got \"5000\""}));

// `ncclscope sim` refuses the file before starting any rank, with the exit code of every scenario
// error, naming the file and the key.
TEST(AccelKey, ABadValueStopsTheLauncherAsAnyScenarioErrorDoes) {
  char dir[] = "/tmp/accel-key-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/bad.json";
  std::ofstream(file) << withAccel(R"({"buffer": "16q"})");
  SimOptions opt;
  opt.ranks = 2;
  opt.scenario = file;
  opt.rank_program = "/nonexistent/ncclscope-sim-rank";  // never reached
  std::ostringstream out, err;
  EXPECT_EQ(runSim(opt, out, err), kSimSetupError);
  EXPECT_EQ(err.str(), "ncclscope sim: invalid scenario: " + file +
                           ": accel.buffer: '16q' is not a size (bytes, or a whole number with k, "
                           "m or g: \"16m\")\n");
  unlink(file.c_str());
  rmdir(dir);
}

// The "<min>..<max>" of the row X(<key>, <type>, "<default>", "<min>..<max>", ...) of the probe's
// configuration table; empty strings when the row is not there. Searched by hand: std::regex trips
// GCC 12's -Wmaybe-uninitialized inside <regex> in the ASan -O2 build.
std::pair<std::string, std::string> RangeOf(const std::string& table, const std::string& row) {
  size_t at = table.find(row);
  if (at == std::string::npos) return {};
  at = table.find("\", \"", at + row.size());  // the end of the default
  if (at == std::string::npos) return {};
  at += 4;
  const size_t dots = table.find("..", at);
  const size_t end = table.find('"', at);
  if (dots == std::string::npos || end == std::string::npos || dots > end) return {};
  return {table.substr(at, dots - at), table.substr(dots + 2, end - dots - 2)};
}

// The ranges above must be the probe's: a value the scenario accepts and the probe refused would
// be warned about in every rank and replaced by a default (plugin/core/config_table.h, one table).
TEST(AccelKey, RangesAreTheProbesOwn) {
  std::ifstream in(std::string(NCCLSCOPE_SCENARIOS_DIR) + "/../../plugin/core/config_table.h");
  ASSERT_TRUE(in) << "plugin/core/config_table.h not found";
  const std::string table(std::istreambuf_iterator<char>(in), {});
  const auto buffer = RangeOf(table, "X(accel_buffer, Size, \"");
  ASSERT_FALSE(buffer.first.empty());
  EXPECT_EQ(std::stoull(buffer.first), kAccelBufferMin);
  EXPECT_EQ(std::stoull(buffer.second), kAccelBufferMax);
  const auto timeout = RangeOf(table, "X(accel_timeout_ms, Int, \"");
  ASSERT_FALSE(timeout.first.empty());
  EXPECT_EQ(std::stoll(timeout.first), kAccelTimeoutMsMin);
  EXPECT_EQ(std::stoll(timeout.second), kAccelTimeoutMsMax);
}

TEST(AccelEnvironment, TheRanksGetTheKeysVariablesUnlessTheEnvironmentSetsThem) {
  const Scenario s = parse(withAccel(R"({"buffer": "1m", "timeout_ms": 5000})"));
  JobEnv job{"abc", "sim-abc", "/tmp/t", "/tmp/run", "", 4, {}, {}};
  job.defaults = accelEnvironment(*s.accel);
  char home[] = "HOME=/root";
  char* plain[] = {home, nullptr};
  const auto env = rankEnvironment(job, 1, plain);
  EXPECT_EQ(lookup(env, "NCCLSCOPE_ACCEL"), "1");
  EXPECT_EQ(lookup(env, "NCCLSCOPE_ACCEL_BUFFER"), "1048576");
  EXPECT_EQ(lookup(env, "NCCLSCOPE_ACCEL_TIMEOUT_MS"), "5000");
  EXPECT_EQ(describeAccelEnvironment(job.defaults, plain),
            "accel from the scenario: NCCLSCOPE_ACCEL=1, NCCLSCOPE_ACCEL_BUFFER=1048576, "
            "NCCLSCOPE_ACCEL_TIMEOUT_MS=5000");
  // The user's environment wins, variable by variable, and the launcher's line says so.
  char off[] = "NCCLSCOPE_ACCEL=0";
  char buffer[] = "NCCLSCOPE_ACCEL_BUFFER=4m";
  char* user[] = {home, off, buffer, nullptr};
  const auto mine = rankEnvironment(job, 1, user);
  EXPECT_EQ(lookup(mine, "NCCLSCOPE_ACCEL"), "0");
  EXPECT_EQ(lookup(mine, "NCCLSCOPE_ACCEL_BUFFER"), "4m");
  EXPECT_EQ(lookup(mine, "NCCLSCOPE_ACCEL_TIMEOUT_MS"), "5000");
  EXPECT_EQ(describeAccelEnvironment(job.defaults, user),
            "accel from the scenario: NCCLSCOPE_ACCEL_TIMEOUT_MS=5000; kept from the environment: "
            "NCCLSCOPE_ACCEL=0, NCCLSCOPE_ACCEL_BUFFER=4m");
}

TEST(AccelEnvironment, OnlyWhatTheKeySaysIsSet) {
  const auto env = accelEnvironment(*parse(withAccel(R"({"enabled": false})")).accel);
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].first, "NCCLSCOPE_ACCEL");
  EXPECT_EQ(env[0].second, "0");
}

TEST(IpcOpenFailsFault, HoldsForTheNamedRanksWholeLife) {
  const Scenario s = parse(testing::withFaults(R"([{"kind": "ipc_open_fails", "ranks": [-1]}])"));
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::kIpcOpenFails);
  checkScenarioForRanks(s, 4);
  EXPECT_TRUE(RankFaults(s, 3, 4).ipcOpenFails());
  EXPECT_FALSE(RankFaults(s, 2, 4).ipcOpenFails());
  // It changes nothing a rank issues: no op fault, no process fault, the data stays checked.
  for (int step = 0; step < s.totalSteps(); ++step) {
    for (int op = 0; op < 3; ++op) EXPECT_TRUE(RankFaults(s, 3, 4).opFaults(step, op).empty());
    EXPECT_TRUE(RankFaults(s, 3, 4).processFaults(step, std::nullopt).empty());
  }
  const JobLayout job(s, 4);
  EXPECT_FALSE(groupDesynced(s, job, 0, 3, 1, 2));
  EXPECT_EQ(describeFault(s.faults[0]), "ipc_open_fails");
}

TEST(IpcOpenFailsFault, TakesNoStepOrOpAndItsRanksMustExist) {
  EXPECT_EQ(
      parseError(testing::withFaults(R"([{"kind": "ipc_open_fails", "ranks": [1], "step": 0}])")),
      "test.json: faults[0].step: unknown key for a ipc_open_fails fault (allowed: kind, ranks)");
  EXPECT_EQ(parseError(testing::withFaults(R"([{"kind": "ipc_open_fails", "ranks": []}])")),
            "test.json: faults[0].ranks: needs at least one rank");
  const Scenario s = parse(testing::withFaults(R"([{"kind": "ipc_open_fails", "ranks": [9]}])"));
  try {
    checkScenarioForRanks(s, 4);
    ADD_FAILURE() << "rank 9 accepted at 4 ranks";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("faults[0].ranks[0]: rank 9 does not exist at 4 ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(DeviceMemoryLimitFault, TheSmallestLimitOfTheRankHoldsForItsWholeLife) {
  const Scenario s = parse(testing::withFaults(
      R"([{"kind": "device_memory_limit", "ranks": [1], "bytes": 1048576},
          {"kind": "device_memory_limit", "ranks": [1, 2], "bytes": 4096}])"));
  checkScenarioForRanks(s, 4);
  EXPECT_EQ(RankFaults(s, 1, 4).deviceMemoryLimit(), 4096u);
  EXPECT_EQ(RankFaults(s, 2, 4).deviceMemoryLimit(), 4096u);
  EXPECT_EQ(RankFaults(s, 0, 4).deviceMemoryLimit(), 0u);
  for (int step = 0; step < s.totalSteps(); ++step) {
    EXPECT_TRUE(RankFaults(s, 1, 4).opFaults(step, 0).empty());
    EXPECT_TRUE(RankFaults(s, 1, 4).processFaults(step, std::nullopt).empty());
  }
  EXPECT_EQ(describeFault(s.faults[0]), "device_memory_limit of 1048576 bytes");
}

TEST(DeviceMemoryLimitFault, NeedsAPositiveByteCountAndNoStep) {
  const auto error = [](const std::string& fault) {
    return parseError(testing::withFaults("[" + fault + "]"));
  };
  EXPECT_EQ(error(R"({"kind": "device_memory_limit", "ranks": [1]})"),
            "test.json: faults[0].bytes: required key is missing");
  EXPECT_EQ(error(R"({"kind": "device_memory_limit", "ranks": [1], "bytes": 0})"),
            "test.json: faults[0].bytes: 0 is out of range [1, 9223372036854775807]");
  EXPECT_EQ(error(R"({"kind": "device_memory_limit", "ranks": [1], "bytes": "1m"})"),
            "test.json: faults[0].bytes: expected an integer, got \"1m\"");
  EXPECT_EQ(error(R"({"kind": "device_memory_limit", "ranks": [1], "bytes": 1, "step": 0})"),
            "test.json: faults[0].step: unknown key for a device_memory_limit fault (allowed: "
            "kind, ranks, bytes)");
}

}  // namespace
}  // namespace ncclscope::sim
