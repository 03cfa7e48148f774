#include "trace/job_layout.h"

#include <unistd.h>

#include <cctype>

#include "trace/ring_layout.h"

namespace ncclscope::trace {
namespace {

const char* NonEmpty(const EnvFn& env, const char* name) {
  const char* v = env(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool AllDigits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (std::isdigit(static_cast<unsigned char>(*s)) == 0) return false;
  }
  return true;
}

}  // namespace

std::string SafePathComponent(const std::string& raw, const std::string& fallback) {
  std::string out;
  for (char c : raw) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  out = out.substr(0, kJobIdBytes - 1);
  if (out.empty() || out == "." || out == "..") return fallback;
  return out;
}

std::string LauncherJobId(const EnvFn& env) {
  const char* slurm_job = NonEmpty(env, "SLURM_JOB_ID");
  if (slurm_job == nullptr) slurm_job = NonEmpty(env, "SLURM_JOBID");
  if (slurm_job != nullptr) {
    const char* step = NonEmpty(env, "SLURM_STEP_ID");
    if (step == nullptr) step = NonEmpty(env, "SLURM_STEPID");
    // Two sruns of one allocation are two jobs to us: each has its own ranks and communicators.
    return step != nullptr && AllDigits(step) ? std::string(slurm_job) + "." + step : slurm_job;
  }
  const char* run = NonEmpty(env, "TORCHELASTIC_RUN_ID");
  if (run != nullptr && std::string(run) != "none") return run;
  return "";
}

std::string ThisHostName(const EnvFn& env) {
  if (const char* host = NonEmpty(env, "NCCLSCOPE_HOST")) {
    return SafePathComponent(host, "unknown-host");
  }
  char host[kHostBytes] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown-host";
  return SafePathComponent(host, "unknown-host");
}

std::string DefaultBaseDir(const EnvFn& env) {
  const char* tmp = NonEmpty(env, "TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/ncclscope-" + std::to_string(getuid());
}

std::string JobHostDir(const std::string& base, const std::string& job, const std::string& host) {
  return base + "/" + job + "/" + host;
}

}  // namespace ncclscope::trace
