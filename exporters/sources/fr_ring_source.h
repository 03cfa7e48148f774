// A directory of PyTorch Flight Recorder dumps (or several, one job's, each node's own) read as if
// it held ring files: each dump becomes the
// header and records trace/flight_recorder/fr_records.h describes, so `analyze`, `timeline`,
// `stats` and `report` read FR dumps with the code that reads ring files.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"
#include "trace/flight_recorder/fr_dir.h"

namespace ncclscope::exporters {

// Every dump counts as alive until the job's newest dump was written: torch has each rank dump
// when the first one signals (ProcessGroupNCCL.cpp's dump signal through the store), seconds apart,
// and a rank that dumped was alive; one that did not is missing, not dead. Thread-safe.
class FrRingSource final : public RingSource {
 public:
  explicit FrRingSource(std::string dir) : dirs_{std::move(dir)} {}
  explicit FrRingSource(std::vector<std::string> dirs) : dirs_(std::move(dirs)) {}
  // The dumps (by rank); *error when a directory cannot be listed.
  std::vector<std::string> List(std::string* error) override;
  bool Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
             std::string* error) override;
  // Files that look like dumps but cannot be used, and what a dump held that could not be mapped
  // (fr_records.h notes, each with its file), one line each, for the input report.
  std::vector<std::string> Notes() const override;
  std::string FileKind() const override { return "Flight Recorder dump(s)"; }
  // The ranks (from the file names) whose dump failed its last visit.
  std::vector<int> UnreadableRanks() const override;

  // How the dump names the records at `indices` (writer indices of Visit) of `rank`'s dump: the
  // entry each stands for, or nullopt for a record made up in reading it (profiler_attach) or an
  // index it has not. Decodes that dump again; false with *error when it cannot. Thread-safe.
  struct EntryNames {
    int64_t record_id = -1;
    int64_t p2p_seq_id = 0;
    bool is_p2p = false;
  };
  bool NamesOf(int rank, const std::vector<uint64_t>& indices,
               std::vector<std::optional<EntryNames>>* out, std::string* error) const;

 private:
  std::vector<std::string> dirs_;
  mutable std::mutex mutex_;
  std::map<std::string, flight_recorder::FrDumpFile> files_;  // by path, from the last List
  std::map<std::string, trace::RingInfo> headers_;            // decoded once: header-only visits
  int64_t last_dump_ns_ = 0;
  std::vector<std::string> skipped_;
  std::map<std::string, std::vector<std::string>> notes_;  // by path
  std::map<std::string, int> unreadable_;                  // path -> rank, failed visits
};

}  // namespace ncclscope::exporters
