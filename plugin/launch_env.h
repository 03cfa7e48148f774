// What the launcher (torchrun, mpirun, srun, PMI) tells a process about its place in the job.
#pragma once

#include <string>
#include <vector>

#include "plugin/config.h"

namespace ncclscope::plugin {

struct LaunchIdentity {
  int global_rank = -1;  // -1: unknown, learnt later from the first communicator
  int local_rank = -1;
  int world_size = -1;
  std::string job_id;  // never empty; safe as one path component
};

// Reads RANK/LOCAL_RANK/WORLD_SIZE, then OMPI_COMM_WORLD_*, SLURM_PROCID/LOCALID/NTASKS, PMI_RANK/
// PMI_SIZE (first launcher that sets a value wins), and the job id from NCCLSCOPE_JOB_ID (via
// config), SLURM_JOB_ID, TORCHELASTIC_RUN_ID, else "local". A value that is not a non-negative
// integer, or is beyond any job (trace/world_size.h), adds a warning and is ignored. Thread-safe
// (no shared state).
LaunchIdentity ReadLaunchIdentity(const EnvLookup& env, const Config& config,
                                  std::vector<std::string>* warnings);

// config.dir when set, else ${TMPDIR:-/tmp}/ncclscope-<uid>/<job id>. Thread-safe.
std::string TraceDir(const EnvLookup& env, const Config& config, const LaunchIdentity& identity);

}  // namespace ncclscope::plugin
