// Writes a timeline as Chrome trace-event JSON ({"traceEvents": [...]}), which Perfetto's UI,
// chrome://tracing and many other tools open. Times are microseconds from the metadata's origin
// (a double: absolute epoch microseconds would lose sub-microsecond detail), the origin itself in
// "metadata", written last. Slices are complete ('X') events, an open one a 'B' without its 'E'.
// Events are written as they come except flow arrows: JSON flows need their first event known ('s',
// then 't', then 'f'), so each flow slice's anchor (24 bytes) is kept and the arrows are written at
// the end, in time order; the protobuf writer needs no such state. Strings are escaped by
// hang_detector::JsonWriter. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "exporters/timeline/output_file.h"
#include "exporters/timeline/timeline_sink.h"

namespace ncclscope::exporters::timeline {

class ChromeJsonWriter final : public TimelineSink {
 public:
  bool Open(const std::string& path, std::string* error) { return out_.Open(path, error); }

  void Begin(int64_t origin_ns, std::string_view description) override;
  void Process(uint64_t uuid, int pid, std::string_view name) override;
  void Track(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name,
             int order) override;
  void CounterTrack(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name) override;
  void Slice(const SliceEvent& slice) override;
  void Instant(uint64_t track, int64_t ts_ns, std::string_view name, std::string_view category,
               const std::vector<Arg>& args) override;
  bool Finish(const std::vector<Arg>& details, std::string* error) override;

 private:
  struct Thread {
    int pid = 0;
    int tid = 0;
    std::string counter_name;  // counter tracks only
  };
  struct FlowAnchor {
    uint64_t flow_id;
    int64_t ts_ns;  // inside the slice, so the arrow binds to it
    int32_t pid;
    int32_t tid;
  };
  // Appends one event (the text of a JSON object) to the array.
  void Event(const std::string& json);
  double Micros(int64_t ns) const { return static_cast<double>(ns - origin_ns_) * 1e-3; }
  const Thread& ThreadOf(uint64_t track);
  void Counter(const CounterSample& sample, int64_t ts_ns);

  OutputFile out_;
  std::string description_;
  int64_t origin_ns_ = 0;
  bool first_event_ = true;
  std::unordered_map<uint64_t, Thread> threads_;  // by track uuid
  std::unordered_map<int, int> next_tid_;         // per pid
  std::vector<FlowAnchor> anchors_;
};

}  // namespace ncclscope::exporters::timeline
