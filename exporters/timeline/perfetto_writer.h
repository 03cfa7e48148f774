// Writes a timeline as a native Perfetto trace (perfetto_trace.proto): a stream of TracePacket
// records, each appended as it comes, so memory stays one packet whatever the trace's size. The
// first packet is a clock snapshot that makes REALTIME the trace's clock, so viewers can show wall
// time; events carry wall-clock ns. Slices are BEGIN/END pairs (an open slice has no END, which
// Perfetto shows as "did not end"), flows are flow_ids on the slice's BEGIN. Not thread-safe.
#pragma once

#include <memory>
#include <string>

#include "exporters/timeline/output_file.h"
#include "exporters/timeline/timeline_sink.h"

namespace ncclscope::exporters::timeline {

class PerfettoWriter final : public TimelineSink {
 public:
  // Opens `path` (through OutputFile); false with *error when it cannot.
  bool Open(const std::string& path, std::string* error) { return out_.Open(path, error); }

  void Begin(int64_t origin_ns, std::string_view description) override;
  void Process(uint64_t uuid, int pid, std::string_view name) override;
  void Track(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name,
             int order) override;
  void CounterTrack(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name) override;
  void Slice(uint64_t track, int64_t begin_ns, int64_t end_ns, std::string_view name,
             std::string_view category, const std::vector<Arg>& args, uint64_t flow_id) override;
  void Instant(uint64_t track, int64_t ts_ns, std::string_view name, std::string_view category,
               const std::vector<Arg>& args) override;
  void Counter(uint64_t track, int64_t ts_ns, int64_t value) override;
  bool Finish(const std::vector<Arg>& details, std::string* error) override;

 private:
  // Wraps body_ (a TracePacket's fields) as one Trace.packet and writes it.
  void EmitPacket();
  // The TrackEvent in event_ as the packet at ts_ns.
  void EmitEvent(int64_t ts_ns);
  void AppendArgs(const std::vector<Arg>& args);

  OutputFile out_;
  int64_t origin_ns_ = 0;
  std::string body_;     // the packet being built
  std::string event_;    // its TrackEvent
  std::string scratch_;  // a nested message (debug annotation, descriptor)
  std::string framed_;   // the packet with its Trace.packet tag and length
};

}  // namespace ncclscope::exporters::timeline
