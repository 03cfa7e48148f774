#include "trace/job_choice.h"

#include <algorithm>
#include <climits>

namespace ncclscope::trace {
namespace {

std::string Named(const std::string& job) {
  return job.empty() ? "(none)" : job;
}

}  // namespace

int64_t HeartbeatWallNs(const RingInfo& info) {
  return info.start_realtime_ns + (info.heartbeat_monotonic_ns - info.start_monotonic_ns);
}

JobChoice ChooseJob(const std::vector<const RingInfo*>& files, const std::string& wanted) {
  JobChoice c;
  c.wanted = !wanted.empty();
  c.job = wanted;
  if (!c.wanted) {
    // Ties (files written in the same nanosecond by two jobs) go to the smaller id, so every
    // reader of the same files keeps the same job.
    int64_t newest = INT64_MIN;
    for (const RingInfo* f : files) {
      const int64_t hb = HeartbeatWallNs(*f);
      if (hb > newest || (hb == newest && f->job_id < c.job)) {
        newest = hb;
        c.job = f->job_id;
      }
    }
  }
  for (const RingInfo* f : files) {
    if (f->job_id == c.job) c.restart = std::max(c.restart, f->restart);
  }
  c.keep.resize(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const bool of_job = files[i]->job_id == c.job;
    c.keep[i] = of_job && files[i]->restart == c.restart ? 1 : 0;
    if (c.keep[i] != 0) continue;
    if (of_job) {
      ++c.earlier_run_files;
      continue;
    }
    ++c.ignored_files;
    c.ignored_jobs.push_back(files[i]->job_id);
  }
  std::sort(c.ignored_jobs.begin(), c.ignored_jobs.end());
  c.ignored_jobs.erase(std::unique(c.ignored_jobs.begin(), c.ignored_jobs.end()),
                       c.ignored_jobs.end());
  return c;
}

std::string JobChoice::Note() const {
  std::string out;
  if (ignored_files != 0) {
    std::string jobs;
    for (const std::string& j : ignored_jobs) jobs += (jobs.empty() ? "" : ", ") + Named(j);
    out = "ignored " + std::to_string(ignored_files) + " ring file(s) of job" +
          (ignored_jobs.size() > 1 ? "s " : " ") + jobs + " (kept job " + Named(job) +
          (wanted ? ", as asked" : ", the newest heartbeat") + ")";
  }
  if (earlier_run_files != 0) {
    out += std::string(out.empty() ? "" : "; ") + "ignored " + std::to_string(earlier_run_files) +
           " ring file(s) of job " + Named(job) + " from runs before its restart " +
           std::to_string(restart) + " (TORCHELASTIC_RESTART_COUNT)";
  }
  return out;
}

}  // namespace ncclscope::trace
