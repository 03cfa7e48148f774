// What the launcher (torchrun, mpirun, srun, PMI) tells a process about its place in the job.
#pragma once

#include <string>
#include <vector>

#include "plugin/core/config.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

struct LaunchIdentity {
  int global_rank = -1;  // -1: unknown, learnt later from the first communicator
  int local_rank = -1;
  int world_size = -1;
  std::string job_id;    // never empty; safe as one path component
  uint32_t restart = 0;  // torchrun's TORCHELASTIC_RESTART_COUNT, 0 when unset or malformed
  std::string host;  // this node's name (NCCLSCOPE_HOST, else the host name); one path component
};

// The global rank and world size a launcher gives: RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
// PMI_RANK and WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS, PMI_SIZE (first that is set and
// valid wins; -1 when none). Adds a warning per malformed or implausible value. Thread-safe.
struct LaunchRank {
  int global_rank = -1;
  int world_size = -1;
  bool operator==(const LaunchRank&) const = default;
};
LaunchRank ReadLaunchRank(const EnvLookup& env, std::vector<std::string>* warnings);

// Reads RANK/LOCAL_RANK/WORLD_SIZE, then OMPI_COMM_WORLD_*, SLURM_PROCID/LOCALID/NTASKS, PMI_RANK/
// PMI_SIZE (first launcher that sets a value wins), the job id from NCCLSCOPE_JOB_ID (via config),
// else the launcher's (trace::LauncherJobId: SLURM job and step, torchelastic run id), else
// "local", torchrun's restart count (TORCHELASTIC_RESTART_COUNT), and the host from NCCLSCOPE_HOST
// (via config), else the host name. A value that is not
// a non-negative integer, or is beyond any job (trace/world_size.h), adds a warning and is
// ignored. Thread-safe (no shared state).
LaunchIdentity ReadLaunchIdentity(const EnvLookup& env, const Config& config,
                                  std::vector<std::string>* warnings);

// config.dir when set (exactly that directory), else <base>/<job id>/<host> with base
// config.base_dir, else ${TMPDIR:-/tmp}/ncclscope-<uid>: each node's ranks of one job share a
// directory of their own, so the watchdog reads only its node's files. Thread-safe.
std::string TraceDir(const EnvLookup& env, const Config& config, const LaunchIdentity& identity);

// Creates TraceDir's directory: config.dir is left to the ring writer (created 0700 and checked);
// the layout's levels are made one by one (trace::EnsurePrivateSubdirs), the default base private
// too, since it lies in the shared /tmp. Sets *dir; false and *error when a level is refused.
// Thread-safe.
bool MakeTraceDir(const EnvLookup& env, const Config& config, const LaunchIdentity& identity,
                  std::string* dir, std::string* error);

// Names a ring file after the process's place in the job: sets options' rank, local rank, world
// size, job id, restart and host from identity (the ring file and the presence file alike).
void SetRingIdentity(const LaunchIdentity& identity, trace::RingOptions* options);

}  // namespace ncclscope::plugin
