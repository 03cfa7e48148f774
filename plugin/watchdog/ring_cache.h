// The watchdog's reader of its trace directory across the looks of one incident. A stuck job's
// rings barely move: between two looks (2 s or more apart) their records stay as they were except
// for completion stamps and the exit of calls still inside, and their headers only gain
// heartbeats. So the compacted files (hang_detector/ingest/rank_file.h, about 48 bytes a record)
// are kept between looks, and a file is read and compacted again only when something it holds
// changed:
//
// - a cached file is checked by reading its header, its communicator table and only the records
//   from the oldest one that may still change (pending a completion, or inside a call) on;
// - anything else in the header that moved (writer index, so also a wrap; drops; the rank; the
//   communicator table), a record that differs, a different file at the path (a restarted
//   process), torn slots in the cached copy: the file is read again whole;
// - only the heartbeat and the flags moved: the cached records are kept with the new header.
//
// Files of another job are kept as their header only. The caller drops the cache when the
// incident ends (Clear). Not thread-safe: one watchdog thread owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/rank_file.h"

namespace ncclscope::plugin {

struct RingCacheStats {
  size_t files_read = 0;    // read and compacted whole in the last look
  size_t files_reused = 0;  // kept from the previous look after a check
  uint64_t records_read = 0;
};

class RingCache {
 public:
  // Indexes the ring files of `dir` of `job` (empty: the newest heartbeat's, trace/job_choice.h)
  // with one reader thread, re-reading only what changed since the previous call. Files of other
  // jobs are left out with one line in *notes. nullopt and *error when the directory cannot be
  // read. Allocates; never throws except std::bad_alloc.
  std::optional<hang_detector::JobIndex> Index(const std::string& dir, const std::string& job,
                                               std::vector<std::string>* notes, std::string* error);
  // Forgets every file (the incident is over).
  void Clear() { entries_.clear(); }
  // Whether the last Index found ring files of other jobs in the directory (a shared directory:
  // the job's verdict file is then named after the job, hang_detector/incident/incident_files.h).
  bool saw_other_jobs() const { return saw_other_jobs_; }
  const RingCacheStats& last() const { return last_; }

 private:
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    hang_detector::RankFile file;
    bool foreign = false;          // another job's: header only
    uint32_t first_unsettled = 0;  // oldest position that may still change; size() when none
    bool seen = false;
  };
  bool ReadWhole(const std::string& path, const std::string& job, Entry* e, std::string* error);
  bool Refresh(const std::string& path, Entry* e);

  std::map<std::string, Entry> entries_;  // by path
  RingCacheStats last_;
  bool saw_other_jobs_ = false;
};

}  // namespace ncclscope::plugin
