// The environment of each rank of a simulated job, and the launcher's defaults that depend on
// where it is installed.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ncclscope::sim {

struct JobEnv {
  std::string tag;        // NCCLSIM_JOB_TAG: names the emulator's shm objects
  std::string job_id;     // NCCLSCOPE_JOB_ID
  std::string trace_dir;  // NCCLSCOPE_DIR
  // NCCLSCOPE_SIM_RUN_DIR, where rank 0 publishes the unique id: apart from the trace directory,
  // so a job whose trace directory is unwritable or full still runs (the probe fails open).
  std::string run_dir;
  std::string probe;  // LD_PRELOAD'ed ahead of anything already there; empty = none
  int nranks = 0;
  std::vector<std::pair<std::string, std::string>> extra;  // applied last
  // Simulated nodes (`ncclscope sim --nodes N`): node k holds ranks [k*n, (k+1)*n) for
  // n = nranks / node_dirs.size(), is named NodeHost(k) and writes to node_dirs[k]; empty: one
  // node, trace_dir.
  std::vector<std::string> node_dirs;
  // Set unless the launcher's environment already has them (the scenario's accel key: a user's
  // NCCLSCOPE_ACCEL* wins over the file's).
  std::vector<std::pair<std::string, std::string>> defaults = {};
};

// "node<k>": the NCCLSCOPE_HOST of simulated node k, in its ring files' names and headers. Pure.
std::string NodeHost(int node);

// "NAME=value" strings for rank `rank`: `base` (the launcher's environ) with the job's variables
// replacing any of the same name, plus its defaults not already in `base`; on simulated nodes,
// its node's host, directory and local rank. Pure.
std::vector<std::string> rankEnvironment(const JobEnv& job, int rank, char** base);

// The job id of a simulated job: `env_job_id` (NCCLSCOPE_JOB_ID) when set and not empty, made a
// path component as the probe makes it (trace::SafePathComponent), so the ring files' headers and
// the node directories carry the name the caller gave, as a real job's do; else "sim-<tag>", new
// for each run. The tag, not the job id, keeps concurrent runs apart (shared memory, run
// directory). Pure.
std::string simJobId(const std::string& tag, const char* env_job_id);

// A tag unique across concurrent jobs on this host: [0-9a-f]+, safe in shm and file names.
// Thread-safe.
std::string newJobTag();

// Directory of the running executable (from /proc/self/exe); empty if unknown. Thread-safe.
std::string selfExeDir();

}  // namespace ncclscope::sim
