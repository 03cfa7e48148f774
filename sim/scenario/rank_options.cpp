#include "sim/scenario/rank_options.h"

#include <cstdlib>
#include <string_view>

namespace ncclscope::sim {
namespace {

std::optional<int> toInt(const char* s) {
  if (s == nullptr || *s == '\0') return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (*end != '\0' || v < 0 || v > (1 << 20)) return std::nullopt;
  return static_cast<int>(v);
}

const char* envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

std::string rankUsage() {
  return "usage: ncclscope-sim-rank SCENARIO [--rank R] [--nranks N] [--run-dir DIR] "
         "[--bootstrap-timeout SECONDS] [--plan]\n"
         "  rank and size default to $RANK and $WORLD_SIZE; the run directory (where rank 0 "
         "publishes the unique id) to $NCCLSCOPE_SIM_RUN_DIR, then $NCCLSCOPE_DIR\n"
         "  --plan prints the NCCL calls this rank would make, one JSON object per line, and "
         "runs nothing";
}

std::optional<RankOptions> parseRankOptions(int argc, char** argv, std::string& error) {
  RankOptions o;
  const char* rank = std::getenv("RANK");
  const char* nranks = std::getenv("WORLD_SIZE");
  const char* timeout = nullptr;
  o.run_dir = envOr("NCCLSCOPE_SIM_RUN_DIR", envOr("NCCLSCOPE_DIR", ""));
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--rank" && has_value) {
      rank = argv[++i];
    } else if (a == "--nranks" && has_value) {
      nranks = argv[++i];
    } else if (a == "--run-dir" && has_value) {
      o.run_dir = argv[++i];
    } else if (a == "--plan") {
      o.plan = true;
    } else if (a == "--bootstrap-timeout" && has_value) {
      timeout = argv[++i];
    } else if (!a.empty() && a[0] != '-' && o.scenario.empty()) {
      o.scenario = std::string(a);
    } else {
      error = "unexpected argument '" + std::string(a) + "'";
      return std::nullopt;
    }
  }
  const auto r = toInt(rank);
  const auto n = toInt(nranks);
  const auto lr = toInt(envOr("LOCAL_RANK", "0"));
  if (o.scenario.empty())
    error = "no scenario file given";
  else if (!r || !n || *n == 0 || *r >= *n)
    error = "need 0 <= rank < nranks (--rank/--nranks or RANK/WORLD_SIZE)";
  else if (o.run_dir.empty() && !o.plan)
    error = "no run directory (--run-dir, NCCLSCOPE_SIM_RUN_DIR or NCCLSCOPE_DIR)";
  if (!error.empty()) return std::nullopt;
  o.rank = *r;
  o.nranks = *n;
  o.local_rank = lr.value_or(0);
  o.job_tag = envOr("NCCLSIM_JOB_TAG", "default");
  if (timeout != nullptr) {
    char* end = nullptr;
    o.bootstrap_timeout_s = std::strtod(timeout, &end);
    if (*end != '\0' || !(o.bootstrap_timeout_s > 0)) {
      error = "bad --bootstrap-timeout '" + std::string(timeout) + "'";
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace ncclscope::sim
