#include "plugin/launch_env.h"

#include <unistd.h>

#include "trace/world_size.h"

namespace ncclscope::plugin {
namespace {

enum class RankVar { kRank, kSize };

// First variable that is set decides; a malformed one is reported and skipped. So is a value no
// job has (trace/world_size.h): it would go into the ring header, and readers would take it for
// the number of ranks to account for.
int ReadRankVar(const EnvLookup& env, std::initializer_list<const char*> names, RankVar kind,
                std::vector<std::string>* warnings) {
  for (const char* name : names) {
    const char* raw = env(name);
    if (raw == nullptr) continue;
    int64_t v = 0;
    if (!ParseInt(raw, "0..2147483647", &v)) {
      warnings->push_back(std::string(name) + "='" + raw + "' is not a rank or size; ignored");
      continue;
    }
    const bool plausible =
        kind == RankVar::kSize ? trace::PlausibleWorldSize(v) : trace::PlausibleWorldSize(v + 1);
    if (plausible) return static_cast<int>(v);
    warnings->push_back(
        std::string(name) + "='" + raw + "' is " +
        (v == 0 ? std::string("no job size")
                : "beyond any job (more than " + std::to_string(trace::kMaxWorldSize) + " ranks)") +
        "; ignored");
  }
  return -1;
}

// Job ids come from schedulers; keep the directory name to one harmless path component.
std::string SafeComponent(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "local";
  return out.substr(0, 63);
}

}  // namespace

LaunchIdentity ReadLaunchIdentity(const EnvLookup& env, const Config& config,
                                  std::vector<std::string>* warnings) {
  LaunchIdentity id;
  id.global_rank = ReadRankVar(env, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"},
                               RankVar::kRank, warnings);
  id.local_rank = ReadRankVar(env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"},
                              RankVar::kRank, warnings);
  id.world_size =
      ReadRankVar(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"},
                  RankVar::kSize, warnings);
  std::string job = config.job_id;
  for (const char* name : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
    if (!job.empty()) break;
    if (const char* raw = env(name)) job = raw;
  }
  id.job_id = SafeComponent(job);
  return id;
}

std::string TraceDir(const EnvLookup& env, const Config& config, const LaunchIdentity& identity) {
  if (!config.dir.empty()) return config.dir;
  const char* tmp = env("TMPDIR");
  std::string base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  return base + "/ncclscope-" + std::to_string(getuid()) + "/" + identity.job_id;
}

}  // namespace ncclscope::plugin
