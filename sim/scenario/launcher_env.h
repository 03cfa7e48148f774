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
};

// "NAME=value" strings for rank `rank`: `base` (the launcher's environ) with the job's variables
// replacing any of the same name. Pure.
std::vector<std::string> rankEnvironment(const JobEnv& job, int rank, char** base);

// A tag unique across concurrent jobs on this host: [0-9a-f]+, safe in shm and file names.
// Thread-safe.
std::string newJobTag();

// Directory of the running executable (from /proc/self/exe); empty if unknown. Thread-safe.
std::string selfExeDir();

}  // namespace ncclscope::sim
