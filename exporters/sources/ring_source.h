// Where the exporter's ring files come from: a trace directory in production, snapshots in memory
// in tests. Implementations say their own thread-safety.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "trace/ring_visitor.h"

namespace ncclscope::exporters {

class RingSource {
 public:
  virtual ~RingSource() = default;
  // The ring files now present, sorted. Sets *error (and returns what it could) when the listing
  // itself fails.
  virtual std::vector<std::string> List(std::string* error) = 0;
  // Visits the records of `name` from writer index `first` on (trace::VisitRingFileFrom).
  virtual bool Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
                     std::string* error) = 0;
  // What the files are, for the input report, and what reading them left aside (one line each;
  // complete once every file was visited).
  virtual std::string FileKind() const { return "ring file(s)"; }
  virtual std::vector<std::string> Notes() const { return {}; }
  // Global ranks whose file is there but could not be read, where the file's name says whose it
  // is (a ring file's does not); complete once every file was visited.
  virtual std::vector<int> UnreadableRanks() const { return {}; }
};

// The *.ring files of a directory (or of several, the node directories of one job copied together
// for a post-mortem, read as one), mapped read-only (never blocks or disturbs the writers). A file
// stays mapped from one visit to the next while it is the same file (device, inode, size), so a
// scrape touches only the pages written since the previous one instead of mapping and faulting
// in 64 files again; a file that is gone from the listing is unmapped. With a host, only the files
// that host wrote (named "<host>-<pid>-<nonce>.ring"): the exporters of several nodes sharing one
// trace directory then each serve their own ranks. Files of one job only: `job`, or when empty the
// job of the file with the newest heartbeat (trace/job_choice.h); what that leaves out is said on
// stderr, one line each time it changes. Thread-safe.
class DirRingSource final : public RingSource {
 public:
  // keep_mapped false: for one pass over a job (stats, timeline) rather than scrapes: each visit
  // maps the file and unmaps it before returning, so a pass over 4096 files never holds them all,
  // and visits of different files run in parallel.
  explicit DirRingSource(std::string dir, std::string host = "", std::string job = "",
                         bool keep_mapped = true)
      : DirRingSource(std::vector<std::string>{std::move(dir)}, std::move(host), std::move(job),
                      keep_mapped) {}
  // One job's files among those of every directory of `dirs` (the job chosen across all of them).
  DirRingSource(std::vector<std::string> dirs, std::string host, std::string job, bool keep_mapped)
      : dirs_(std::move(dirs)),
        host_(std::move(host)),
        job_(std::move(job)),
        keep_mapped_(keep_mapped) {}
  ~DirRingSource() override;
  DirRingSource(const DirRingSource&) = delete;
  DirRingSource& operator=(const DirRingSource&) = delete;
  std::vector<std::string> List(std::string* error) override;
  bool Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
             std::string* error) override;

 private:
  struct Mapping {
    uint64_t device = 0;
    uint64_t inode = 0;
    size_t size = 0;
    void* base = nullptr;
  };
  // The mapping of `name` as it is now, mapped afresh when the file changed; null when it cannot
  // be mapped (Visit then lets trace::VisitRingFileFrom say why).
  const Mapping* MappingOf(const std::string& name);
  static void Unmap(const Mapping& m);
  // Drops the files of other jobs than the one served from `files` (mutex_ held).
  void KeepOneJob(std::vector<std::string>* files);

  std::vector<std::string> dirs_;
  std::string host_;
  std::string job_;
  bool keep_mapped_;
  std::mutex mutex_;
  std::string said_;  // the last line about ignored files, so it is said once per change
  std::map<std::string, Mapping> mapped_;  // by path
};

}  // namespace ncclscope::exporters
