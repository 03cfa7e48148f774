// The process groups of a job as Flight Recorder dumps name them: one per communicator id, numbered
// job-wide so that every rank's dump names the same communicator the same way (torch's pg_config
// uses one pg name on every member, ProcessGroupNCCL.cpp's
// pg_config).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/trace_set.h"

namespace ncclscope::exporters::fr {

struct JobGroup {
  uint64_t comm_id = 0;
  std::string name;  // decimal index in job order: "0", "1", ...
  std::string desc;  // the comm's recorded name, else "default_pg" or "pg<index>"
  // Global rank of each comm rank (index = comm rank); only the members whose ring file was read,
  // so shorter than nranks when some are missing (then also `complete` is false).
  std::vector<int> ranks;
  int nranks = 0;
  bool complete = true;
};

struct JobGroups {
  std::vector<JobGroup> groups;        // job order
  std::map<uint64_t, size_t> by_comm;  // comm id -> index in groups
  std::vector<std::string> notes;      // one line per group whose members are not all known
};

// The groups of `files` (one ring per rank of one job), ordered by (lowest member global rank,
// that rank's comm-table position). The first communicator spanning the whole world (world_size
// members) without a recorded name is "default_pg". Pure; thread-safe.
JobGroups GroupsOfJob(const std::vector<const trace::RingSnapshot*>& files);

}  // namespace ncclscope::exporters::fr
