// The report's timeline: a TimelineSink (exporters/timeline/timeline_sink.h) that keeps the
// device slices and verdict marks of the few ranks a report shows and draws them as one inline
// SVG, a row per rank, slices coloured by communicator, slices that never ended in red up to the
// window's end, verdicts as red marks. Not thread-safe (no parts: the builder writes one rank at
// a time).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exporters/timeline/timeline_sink.h"

namespace ncclscope::exporters::report {

class SvgTimeline final : public timeline::TimelineSink {
 public:
  // At most this many slices per rank are kept (the earliest in the window): a page stays small.
  static constexpr size_t kMaxSlicesPerRank = 1000;

  void Begin(int64_t origin_ns, std::string_view description) override;
  void Process(uint64_t uuid, int pid, std::string_view name) override;
  void Track(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name,
             int order) override;
  void CounterTrack(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name) override;
  void Slice(const timeline::SliceEvent& slice) override;
  void Instant(uint64_t track, int64_t ts_ns, std::string_view name, std::string_view category,
               const std::vector<timeline::Arg>& args) override;
  bool Finish(const std::vector<timeline::Arg>& details, std::string* error) override;

  // The SVG, drawn over [from_ns, to_ns] (wall-clock ns; INT64_MIN/MAX: the slices' own extent).
  std::string Render(int64_t from_ns, int64_t to_ns) const;
  size_t ranks() const { return rows_.size(); }

 private:
  struct Bar {
    int64_t begin_ns;
    int64_t end_ns;  // timeline::kOpenEnd: never ended
    std::string label;
    std::string comm;
  };
  struct Mark {
    int64_t ts_ns;
    std::string label;
  };
  struct Row {
    std::string name;
    std::vector<Bar> bars;
    std::vector<Mark> marks;
    size_t dropped = 0;  // slices past kMaxSlicesPerRank
  };
  std::map<int, Row> rows_;                        // by pid (the global rank)
  std::map<uint64_t, int> pid_of_track_;           // every track of a kept rank
  std::map<uint64_t, std::string> comm_of_track_;  // device tracks: "COMM · stream 0x..."
};

}  // namespace ncclscope::exporters::report
