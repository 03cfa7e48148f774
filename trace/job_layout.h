// Where a job's traces go: one directory per job and node, <base>/<job>/<host>/, with the job named
// by its launcher, so every task of one launch agrees on it and two jobs never share a directory.
// Shared by the probe (plugin/), `ncclscope run` and the scenario runner's simulated nodes.
#pragma once

#include <functional>
#include <string>

namespace ncclscope::trace {

// getenv-like: the value of a variable, or null when unset. Injected so tests fake launchers.
using EnvFn = std::function<const char*(const char*)>;

// raw as one harmless path component of at most 63 characters (what the ring header holds):
// characters other than [A-Za-z0-9._-] become '_'; fallback when nothing usable is left ("", ".",
// ".."). Pure.
std::string SafePathComponent(const std::string& raw, const std::string& fallback);

// The job as its launcher names it, the same in every task of one launch; "" when no launcher
// does. SLURM: SLURM_JOB_ID (or the older SLURM_JOBID), plus ".<step>" from SLURM_STEP_ID (or
// SLURM_STEPID), which srun sets in every task of a step and sbatch's batch script lacks; then
// torchrun's TORCHELASTIC_RUN_ID unless it is "none" (torchrun's default --rdzv-id, shared by
// unrelated jobs). Kubernetes puts no job name in a pod's environment (a Kubeflow PyTorchJob sets
// MASTER_ADDR/RANK/WORLD_SIZE and PET_* only, an indexed Job JOB_COMPLETION_INDEX): there
// NCCLSCOPE_JOB_ID comes from the downward API (README). Not sanitized. Thread-safe if env is.
std::string LauncherJobId(const EnvFn& env);

// The name this node's ring files carry: NCCLSCOPE_HOST when set (a pod's host name is not its
// node's; simulated nodes), else gethostname(); as SafePathComponent, "unknown-host" when
// neither gives one. Thread-safe if env is.
std::string ThisHostName(const EnvFn& env);

// ${TMPDIR:-/tmp}/ncclscope-<uid>: the default base when NCCLSCOPE_BASE_DIR is not set. Lies in a
// directory shared by every user, so it is created and checked private (EnsurePrivateSubdirs with
// private_base). Thread-safe if env is.
std::string DefaultBaseDir(const EnvFn& env);

// base + "/" + job + "/" + host, components as given (pass SafePathComponent's). Pure.
std::string JobHostDir(const std::string& base, const std::string& job, const std::string& host);

}  // namespace ncclscope::trace
