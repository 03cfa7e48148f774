// `ncclscope accel-plan`: the routing's explanation on request (docs/collectives.md). The expected
// lines come from the planner itself for the same call, so the test pins what the command passes
// on (every option reaches the planner, the line printed whole), not today's table values; bad
// values name their option and exit 3 (unusable input) without printing a plan.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/planner/planner.h"
#include "collectives/planner/tuning_table.h"
#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

namespace nc = collectives;

constexpr int32_t kNcclInt32 = 2, kNcclFloat32 = 7, kNcclBfloat16 = 9, kNcclMax = 2;

ProcessResult AccelPlan(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli(), "accel-plan"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {}, 30);
}

// The call as the command states it by default: one node, peers mapped, sm_90, a sum, 16 MiB.
nc::AllReduceCall PlanCall(int32_t dtype, size_t count, int nranks) {
  nc::AllReduceCall c;
  c.nccl_dtype = dtype;
  c.count = count;
  c.nranks = nranks;
  c.single_node = true;
  c.peers_reachable = true;
  c.gpu = nc::GpuClass::kHopper;
  c.buffer_bytes = size_t{16} << 20;
  return c;
}

std::string Explained(const nc::AllReduceCall& c) {
  char line[256];
  nc::ExplainPlan(nc::PlanAllReduce(c), c, line, sizeof line);
  return std::string(line) + "\n";
}

void ExpectLine(const std::vector<std::string>& args, const nc::AllReduceCall& call) {
  const ProcessResult p = AccelPlan(args);
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, Explained(call)) << ::testing::PrintToString(args);
}

TEST(CliAccelPlan, EveryOptionReachesThePlanner) {
  nc::AllReduceCall c = PlanCall(kNcclBfloat16, 1 << 20, 8);
  ExpectLine({"--dtype", "bf16", "--count", "1048576", "--ranks", "8"}, c);
  // NCCL's own type name is the same type.
  ExpectLine({"--dtype", "bfloat16", "--count", "1048576", "--ranks", "8"}, c);
  nc::AllReduceCall ampere = c;
  ampere.gpu = nc::GpuClass::kAmpere;
  ExpectLine({"--dtype", "bf16", "--count", "1048576", "--ranks", "8", "--gpu", "sm_80"}, ampere);
  nc::AllReduceCall blackwell = c;  // 2 MiB: past sm_100's 1 MiB cap at 8 ranks, to NCCL
  blackwell.gpu = nc::GpuClass::kBlackwell;
  ExpectLine({"--dtype", "bf16", "--count", "1048576", "--ranks", "8", "--gpu", "sm_100"},
             blackwell);
  EXPECT_EQ(
      AccelPlan({"--dtype", "bf16", "--count", "1048576", "--ranks", "8", "--gpu", "sm_100"}).out,
      "nccl: larger than the tuning table's two-shot limit\n");
  nc::AllReduceCall small_buffer = c;
  small_buffer.buffer_bytes = size_t{1} << 20;
  ExpectLine({"--dtype", "bf16", "--count", "1048576", "--ranks", "8", "--buffer", "1m"},
             small_buffer);
  nc::AllReduceCall registered = PlanCall(kNcclFloat32, 4096, 4);
  registered.input_registered = true;
  ExpectLine({"--dtype", "fp32", "--count", "4096", "--ranks", "4", "--registered"}, registered);
  registered.in_place = true;
  ExpectLine({"--dtype", "fp32", "--count", "4096", "--ranks", "4", "--registered", "--in-place"},
             registered);
  nc::AllReduceCall max = PlanCall(kNcclBfloat16, 4096, 4);
  max.nccl_redop = kNcclMax;
  ExpectLine({"--dtype", "bf16", "--count", "4096", "--ranks", "4", "--redop", "max"}, max);
  ExpectLine({"--dtype", "int32", "--count", "4096", "--ranks", "4"},
             PlanCall(kNcclInt32, 4096, 4));
}

TEST(CliAccelPlan, TheAnswersDifferAsTheRoutingWould) {
  // The cases above would pass with a command that ignores an option if the planner answered the
  // same anyway: these are the answers a user tells apart.
  const ProcessResult ours = AccelPlan({"--dtype", "bf16", "--count", "1048576", "--ranks", "8"});
  const ProcessResult too_big =
      AccelPlan({"--dtype", "bf16", "--count", "1048576", "--ranks", "8", "--buffer", "1m"});
  const ProcessResult int32 = AccelPlan({"--dtype", "int32", "--count", "4096", "--ranks", "4"});
  const ProcessResult max =
      AccelPlan({"--dtype", "bf16", "--count", "4096", "--ranks", "4", "--redop", "max"});
  EXPECT_EQ(ours.out.rfind("nccl:", 0), std::string::npos) << ours.out;
  EXPECT_EQ(too_big.out, std::string("nccl: ") + nc::FallbackText(nc::Fallback::kBuffer) + "\n");
  EXPECT_EQ(int32.out, std::string("nccl: ") + nc::FallbackText(nc::Fallback::kDtype) + "\n");
  EXPECT_EQ(max.out, std::string("nccl: ") + nc::FallbackText(nc::Fallback::kRedop) + "\n");
}

TEST(CliAccelPlan, TheTableShowsEveryRowWithItsProvenance) {
  const ProcessResult p = AccelPlan({"--table"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  size_t n = 0;
  const nc::TuningRow* rows = nc::TuningRows(&n);
  ASSERT_GT(n, 0u);
  for (size_t i = 0; i < n; ++i) {
    const std::string ranks =
        std::to_string(rows[i].min_ranks) + "-" + std::to_string(rows[i].max_ranks);
    const size_t at = p.out.find(rows[i].provenance);
    ASSERT_NE(at, std::string::npos) << rows[i].provenance << "\n" << p.out;
    const size_t begin = p.out.rfind('\n', at) + 1;
    const std::string line = p.out.substr(begin, at - begin);
    EXPECT_EQ(line.rfind(nc::GpuClassName(rows[i].gpu), 0), 0u) << line;
    EXPECT_NE(line.find(" " + ranks + " "), std::string::npos) << line;
  }
  // The all-to-all and exchange kernels' rows follow, each under its heading, once per row.
  const size_t a2a = p.out.find("\nalltoall (pull)\n");
  const size_t exchange = p.out.find("\ngrouped sends and receives (exchange)\n");
  ASSERT_NE(a2a, std::string::npos) << p.out;
  ASSERT_NE(exchange, std::string::npos) << p.out;
  const nc::AlltoAllTuningRow* a2a_rows = nc::AlltoAllTuningRows(&n);
  for (size_t i = 0; i < n; ++i) {
    const size_t at = p.out.find(a2a_rows[i].provenance, a2a);
    EXPECT_TRUE(at != std::string::npos && at < exchange) << a2a_rows[i].provenance;
  }
  const nc::ExchangeTuningRow* exchange_rows = nc::ExchangeTuningRows(&n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NE(p.out.find(exchange_rows[i].provenance, exchange), std::string::npos)
        << exchange_rows[i].provenance;
  }
}

TEST(CliAccelPlan, BadValuesNameTheirOptionAndExit3) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--dtype", "bogus", "--count", "16", "--ranks", "2"}, "--dtype"},
      {{"--dtype", "bf16", "--count", "-5", "--ranks", "2"}, "--count"},
      {{"--dtype", "bf16", "--count", "many", "--ranks", "2"}, "--count"},
      {{"--dtype", "bf16", "--count", "16", "--ranks", "0"}, "--ranks"},
      {{"--dtype", "bf16", "--count", "16", "--ranks", "2", "--gpu", "hopper"}, "--gpu"},
      {{"--dtype", "bf16", "--count", "16", "--ranks", "2", "--redop", "xor"}, "--redop"},
      {{"--dtype", "bf16", "--count", "16", "--ranks", "2", "--buffer", "0"}, "--buffer"},
      {{"--dtype", "bf16", "--count", "16", "--ranks", "2", "--buffer", "2x"}, "--buffer"},
      {{"--dtype", "bf16", "--count", "16"}, "--ranks"},
  };
  for (const auto& [args, option] : cases) {
    const ProcessResult p = AccelPlan(args);
    EXPECT_EQ(p.exit_code, kUnusableInput) << ::testing::PrintToString(args) << p.err;
    EXPECT_NE(p.err.find(option), std::string::npos) << ::testing::PrintToString(args) << p.err;
    EXPECT_TRUE(p.out.empty()) << p.out;
  }
  // The type list says which types exist, so the user can correct the word.
  const ProcessResult p = AccelPlan({"--dtype", "bogus", "--count", "16", "--ranks", "2"});
  EXPECT_NE(p.err.find("bfloat16 (bf16)"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace ncclscope::testing
