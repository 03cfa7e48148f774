#include "plugin/core/launch_env.h"

#include "trace/job_layout.h"
#include "trace/trace_dir.h"
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

std::string BaseDir(const EnvLookup& env, const Config& config) {
  if (!config.base_dir.empty()) return config.base_dir;
  return trace::DefaultBaseDir(env);
}

}  // namespace

LaunchRank ReadLaunchRank(const EnvLookup& env, std::vector<std::string>* warnings) {
  LaunchRank r;
  r.global_rank = ReadRankVar(env, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"},
                              RankVar::kRank, warnings);
  r.world_size =
      ReadRankVar(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"},
                  RankVar::kSize, warnings);
  return r;
}

LaunchIdentity ReadLaunchIdentity(const EnvLookup& env, const Config& config,
                                  std::vector<std::string>* warnings) {
  LaunchIdentity id;
  const LaunchRank rank = ReadLaunchRank(env, warnings);
  id.global_rank = rank.global_rank;
  id.local_rank = ReadRankVar(env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"},
                              RankVar::kRank, warnings);
  id.world_size = rank.world_size;
  const std::string job = !config.job_id.empty() ? config.job_id : trace::LauncherJobId(env);
  id.job_id = trace::SafePathComponent(job, "local");
  if (const char* raw = env("TORCHELASTIC_RESTART_COUNT")) {
    int64_t v = 0;
    if (ParseInt(raw, "0..1000000", &v)) {
      id.restart = static_cast<uint32_t>(v);
    } else {
      warnings->push_back(std::string("TORCHELASTIC_RESTART_COUNT='") + raw +
                          "' is not a restart count; ignored");
    }
  }
  id.host = !config.host.empty() ? trace::SafePathComponent(config.host, "unknown-host")
                                 : trace::ThisHostName(env);
  return id;
}

std::string TraceDir(const EnvLookup& env, const Config& config, const LaunchIdentity& identity) {
  if (!config.dir.empty()) return config.dir;
  return trace::JobHostDir(BaseDir(env, config), identity.job_id, identity.host);
}

bool MakeTraceDir(const EnvLookup& env, const Config& config, const LaunchIdentity& identity,
                  std::string* dir, std::string* error) {
  if (!config.dir.empty()) {
    *dir = config.dir;
    return true;
  }
  return trace::EnsurePrivateSubdirs(BaseDir(env, config), config.base_dir.empty(),
                                     {identity.job_id, identity.host}, dir, error);
}

void SetRingIdentity(const LaunchIdentity& identity, trace::RingOptions* options) {
  options->global_rank = identity.global_rank;
  options->local_rank = identity.local_rank;
  options->world_size = identity.world_size;
  options->job_id = identity.job_id;
  options->restart = identity.restart;
  options->host = identity.host;
}

}  // namespace ncclscope::plugin
