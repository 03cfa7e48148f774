// Which job's ring files a reader correlates when a directory holds files of several jobs (a
// reused NCCLSCOPE_DIR, a default directory shared by runs without a launcher job id): mixing them
// gives wrong verdicts (the other job's exited ranks read as dead). The ring header names each
// file's job (FileHeader::job_id).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/ring_visitor.h"

namespace ncclscope::trace {

struct JobChoice {
  std::string job;         // the job kept
  uint32_t restart = 0;    // its run kept: the highest restart count among its files
  bool wanted = false;     // job was asked for, not chosen by heartbeat
  std::vector<char> keep;  // per file, in the order given: 1 when it is of `job` and `restart`
  size_t ignored_files = 0;
  std::vector<std::string> ignored_jobs;  // distinct, sorted
  size_t earlier_run_files = 0;  // files of `job` from runs before `restart` (torchrun restarts)
  // Files not kept, of other jobs or earlier runs.
  size_t LeftOut() const { return ignored_files + earlier_run_files; }
  // "ignored 3 ring file(s) of job 1233 (kept job 1234, the newest heartbeat)"; empty when
  // nothing was ignored.
  std::string Note() const;
};

// Wall-clock time (ns) of a file's last heartbeat, from its own realtime/monotonic pair.
int64_t HeartbeatWallNs(const RingInfo& info);

// Keeps the files of `wanted` when it is not empty (none may match); otherwise those of the job
// whose file has the newest heartbeat: the job running now, or the last one to run. A file without
// a job id (an old format) belongs to the job "". Of that job, only the newest run is kept: files
// of an earlier restart (torchrun restarts a job into the same directory; its dead ranks are not
// the new run's) are left out. Pure.
JobChoice ChooseJob(const std::vector<const RingInfo*>& files, const std::string& wanted);

}  // namespace ncclscope::trace
