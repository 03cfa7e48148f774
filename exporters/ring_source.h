// Where the exporter's ring files come from: a trace directory in production, snapshots in memory
// in tests. Implementations say their own thread-safety.
#pragma once

#include <cstdint>
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
};

// The *.ring files of a directory, mapped read-only at each visit: never blocks or disturbs the
// writers. With a host, only the files that host wrote (named "<host>-<pid>-<nonce>.ring"): the
// exporters of several nodes sharing one trace directory then each serve their own ranks.
// Thread-safe.
class DirRingSource final : public RingSource {
 public:
  explicit DirRingSource(std::string dir, std::string host = "")
      : dir_(std::move(dir)), host_(std::move(host)) {}
  std::vector<std::string> List(std::string* error) override;
  bool Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
             std::string* error) override;

 private:
  std::string dir_;
  std::string host_;
};

}  // namespace ncclscope::exporters
