// `ncclscope accel-plan --dtype T --count N --ranks R [--gpu sm_XY] [--redop OP] [--in-place]
// [--registered] [--buffer SIZE]`: where NCCLSCOPE_ACCEL would send one ncclAllReduce, and why
// (collectives::ExplainPlan's line). `ncclscope accel-plan --table`: the tuning table the choice
// comes from, each row with its provenance (docs/collectives.md).
#include <charconv>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "collectives/planner/planner.h"
#include "collectives/planner/tuning_table.h"
#include "tools/commands.h"
#include "trace/nccl_names.h"

namespace ncclscope::tools {
namespace {

namespace nc = collectives;

// NCCLSCOPE_ACCEL_BUFFER's default (plugin/core/config_table.h): what a job that does not set it
// plans with.
constexpr size_t kDefaultBufferBytes = size_t{16} << 20;
// NCCL's ncclDataType_t and ncclRedOp_t values trace/nccl_names.h names (ncclNumTypes, ncclNumOps).
constexpr int32_t kNcclTypes = 12;
constexpr int32_t kNcclOps = 5;

struct Options {
  std::string dtype, redop = "sum", gpu = "sm_90";
  std::optional<size_t> count;
  std::optional<int> ranks;
  size_t buffer = kDefaultBufferBytes;
  bool in_place = false, registered = false, table = false;
};

// NCCL's name ("bfloat16") or the kernels' short one ("bf16"); nullopt when neither.
std::optional<int32_t> DtypeNumber(const std::string& name) {
  for (int32_t d = 0; d < kNcclTypes; ++d) {
    nc::Dtype ours;
    if (name == trace::DataTypeName(d) || (nc::DtypeOf(d, &ours) && name == nc::DtypeName(ours))) {
      return d;
    }
  }
  return std::nullopt;
}

std::string DtypeChoices() {
  std::string s;
  for (int32_t d = 0; d < kNcclTypes; ++d) {
    s += (s.empty() ? "" : ", ") + trace::DataTypeName(d);
    nc::Dtype ours;
    if (nc::DtypeOf(d, &ours)) s += std::string(" (") + nc::DtypeName(ours) + ")";
  }
  return s;
}

std::optional<int32_t> RedopNumber(const std::string& name) {
  for (int32_t r = 0; r < kNcclOps; ++r) {
    if (name == trace::RedOpName(r)) return r;
  }
  return std::nullopt;
}

// "sm_90" -> compute capability major 9; nullopt when not sm_<digits>.
// Parsed by hand: std::regex here trips GCC 12's -Wmaybe-uninitialized inside <regex> under
// ASan at -O2, and the format is too small to need it.
std::optional<int> ComputeMajor(const std::string& gpu) {
  constexpr std::string_view kPrefix = "sm_";
  const std::string_view digits = std::string_view(gpu).substr(
      gpu.compare(0, kPrefix.size(), kPrefix) == 0 ? kPrefix.size() : gpu.size());
  if (digits.size() < 2 || digits.size() > 4) return std::nullopt;
  int value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value / 10;  // the last digit is the minor version
}

std::string Bytes(size_t b) {
  if (b >= (size_t{1} << 20) && b % (size_t{1} << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

void PrintTable() {
  size_t n = 0;
  const nc::TuningRow* rows = nc::TuningRows(&n);
  std::printf("%-6s %-6s %-15s %-15s %-7s %s\n", "gpu", "ranks", "one-shot below", "two-shot below",
              "launch", "provenance");
  for (size_t i = 0; i < n; ++i) {
    const nc::TuningRow& r = rows[i];
    const std::string ranks = std::to_string(r.min_ranks) + "-" + std::to_string(r.max_ranks);
    const std::string launch = std::to_string(r.blocks) + "x" + std::to_string(r.threads);
    std::printf("%-6s %-6s %-15s %-15s %-7s %s\n", nc::GpuClassName(r.gpu), ranks.c_str(),
                Bytes(r.one_shot_max_bytes).c_str(), Bytes(r.two_shot_max_bytes).c_str(),
                launch.c_str(), r.provenance);
  }
  // The other kernels' rows: ncclAlltoAll's pull, and the exchange of a group's sends and
  // receives (docs/collectives.md).
  const nc::AlltoAllTuningRow* a2a = nc::AlltoAllTuningRows(&n);
  std::printf("\nalltoall (pull)\n%-6s %-6s %-15s %-7s %s\n", "gpu", "ranks", "sendbuff below",
              "launch", "provenance");
  for (size_t i = 0; i < n; ++i) {
    const nc::AlltoAllTuningRow& r = a2a[i];
    const std::string ranks = std::to_string(r.min_ranks) + "-" + std::to_string(r.max_ranks);
    const std::string launch = std::to_string(r.blocks) + "x" + std::to_string(r.threads);
    std::printf("%-6s %-6s %-15s %-7s %s\n", nc::GpuClassName(r.gpu), ranks.c_str(),
                Bytes(r.max_bytes).c_str(), launch.c_str(), r.provenance);
  }
  const nc::ExchangeTuningRow* ex = nc::ExchangeTuningRows(&n);
  std::printf("\ngrouped sends and receives (exchange)\n%-6s %-6s %-15s %-7s %s\n", "gpu", "ranks",
              "chunk", "a part", "provenance");
  for (size_t i = 0; i < n; ++i) {
    const nc::ExchangeTuningRow& r = ex[i];
    const std::string ranks = std::to_string(r.min_ranks) + "-" + std::to_string(r.max_ranks);
    const std::string launch = std::to_string(r.blocks_per_part) + "x" + std::to_string(r.threads);
    std::printf("%-6s %-6s %-15s %-7s %s\n", nc::GpuClassName(r.gpu), ranks.c_str(),
                Bytes(r.chunk_bytes).c_str(), launch.c_str(), r.provenance);
  }
}

// A whole number in [min, max], checked on the text as typed: CLI11 would wrap "-5" into a huge
// size_t, and its range check prints its bounds as doubles.
CLI::Validator WholeNumber(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc() && ptr == end && v >= min && v <= max) return "";
        return "'" + text + "' is not a whole number from " + std::to_string(min) + " to " +
               std::to_string(max);
      },
      "");
}

int Fail(const std::string& message) {
  std::cerr << "ncclscope accel-plan: " << message << "\n";
  return kUnusableInput;
}

int Run(const Options& o) {
  if (o.table) {
    PrintTable();
    return 0;
  }
  if (o.dtype.empty() || !o.count || !o.ranks) {
    return Fail("--dtype, --count and --ranks are required (or --table for the tuning table)");
  }
  nc::AllReduceCall call;
  const std::optional<int32_t> dtype = DtypeNumber(o.dtype);
  if (!dtype)
    return Fail("--dtype '" + o.dtype + "' is not an NCCL data type; one of " + DtypeChoices());
  const std::optional<int32_t> redop = RedopNumber(o.redop);
  if (!redop) return Fail("--redop '" + o.redop + "' is not one of sum, prod, max, min, avg");
  const std::optional<int> major = ComputeMajor(o.gpu);
  if (!major) return Fail("--gpu '" + o.gpu + "' is not a GPU architecture such as sm_90 or sm_80");
  call.nccl_dtype = *dtype;
  call.nccl_redop = *redop;
  call.count = *o.count;
  call.nranks = *o.ranks;
  // The question asked is the planner's own: a communicator on one host whose peers' memory is
  // mapped, the stream not being captured. Set-up decides those before any call is planned.
  call.single_node = true;
  call.peers_reachable = true;
  call.in_place = o.in_place;
  call.input_registered = o.registered;
  call.gpu = nc::GpuClassOf(*major);
  call.buffer_bytes = o.buffer;
  char line[256];
  nc::ExplainPlan(nc::PlanAllReduce(call), call, line, sizeof line);
  std::printf("%s\n", line);
  return 0;
}

}  // namespace

void RegisterAccelPlanCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "accel-plan",
      "Say where NCCLSCOPE_ACCEL=1 sends one ncclAllReduce on one node (ncclscope's one-shot or "
      "two-shot kernel, or NCCL and why), or print the tuning table (--table)");
  auto o = std::make_shared<Options>();
  cmd->add_option("--dtype", o->dtype, "Data type: NCCL's name (bfloat16) or bf16, fp16, fp32");
  // Bounds: a count whose byte size fits in size_t for every type; a communicator NCCL can make.
  cmd->add_option("--count", o->count, "Elements per rank, as ncclAllReduce's count")
      ->check(WholeNumber(0, int64_t{1} << 56));
  cmd->add_option("--ranks", o->ranks, "Ranks in the communicator")
      ->check(WholeNumber(1, int64_t{1} << 24));
  cmd->add_option("--gpu", o->gpu, "GPU architecture (sm_80, sm_90, sm_100, ...)")
      ->capture_default_str();
  cmd->add_option("--redop", o->redop, "Reduction: sum, prod, max, min, avg")
      ->capture_default_str();
  cmd->add_flag("--in-place", o->in_place, "sendbuff == recvbuff");
  cmd->add_flag("--registered", o->registered,
                "The input lies in memory every peer has mapped (read in place, no copy-in)");
  cmd->add_option("--buffer", o->buffer,
                  "Bytes of the communicator's staging buffer (NCCLSCOPE_ACCEL_BUFFER; "
                  "suffixes k, m, g)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber)
      ->default_str("16m");
  cmd->add_flag("--table", o->table, "Print the tuning table, each row with its provenance");
  cmd->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace ncclscope::tools
