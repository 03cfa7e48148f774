// What a timeline is made of, independent of the file format: tracks (a process per rank, child
// tracks per thread and per communicator x stream, counter tracks), slices, instants, counter
// values and flow arrows. timeline_builder.cpp produces these from ring files; a sink writes them
// as Perfetto protobuf (perfetto_writer.h) or Chrome trace JSON (chrome_json_writer.h). Events
// arrive rank by rank, not in time order: both formats are sorted by their readers. Times are
// wall-clock ns (CLOCK_REALTIME of the host that recorded them). Not thread-safe; parts (NewPart)
// may each be written by a thread of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscope::exporters::timeline {

// One key/value shown in the viewer's details pane.
struct Arg {
  enum class Kind { kInt, kString };
  std::string_view key;
  Kind kind = Kind::kInt;
  int64_t int_value = 0;
  std::string_view string_value;

  static Arg Int(std::string_view k, int64_t v) { return {k, Kind::kInt, v, {}}; }
  static Arg Str(std::string_view k, std::string_view v) { return {k, Kind::kString, 0, v}; }
};

// A slice whose end was never seen (a call still inside NCCL, a kernel that never completed).
inline constexpr int64_t kOpenEnd = INT64_MIN;

// A counter track's value sampled at a slice's begin or end: the operations-in-flight counter
// changes exactly when a call begins and when device work ends, so its values ride on those
// events instead of events of their own.
struct CounterSample {
  uint64_t track = 0;
  int64_t value = 0;
};

// [begin_ns, end_ns] on a track; end_ns kOpenEnd when it never ended. flow_id 0: no arrow;
// otherwise slices of one id (the same collective on every rank) are joined in time order.
struct SliceEvent {
  uint64_t track = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  std::string_view name;
  std::string_view category;
  const std::vector<Arg>* args = nullptr;
  uint64_t flow_id = 0;
  const CounterSample* at_begin = nullptr;
  const CounterSample* at_end = nullptr;  // ignored for an open slice
};

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  // First: the trace's earliest time (the JSON writer's zero) and what the trace holds.
  virtual void Begin(int64_t origin_ns, std::string_view description) = 0;
  // A rank: pid is what viewers group and sort by (the global rank); uuid is unique in the trace.
  virtual void Process(uint64_t uuid, int pid, std::string_view name) = 0;
  // A track under a process, in `order` among its siblings.
  virtual void Track(uint64_t uuid, uint64_t process_uuid, int pid, std::string_view name,
                     int order) = 0;
  virtual void CounterTrack(uint64_t uuid, uint64_t process_uuid, int pid,
                            std::string_view name) = 0;
  virtual void Slice(const SliceEvent& slice) = 0;
  virtual void Instant(uint64_t track, int64_t ts_ns, std::string_view name,
                       std::string_view category, const std::vector<Arg>& args) = 0;
  // For writing several ranks at once: a sink of the same format whose events (a whole rank's,
  // from Process on) stay in memory until AppendPart writes them into this one. nullptr: the
  // format needs every event through this sink, from one thread (the builder then writes one
  // rank at a time). Called from the thread that calls everything else.
  virtual std::unique_ptr<TimelineSink> NewPart() { return nullptr; }
  virtual void AppendPart(TimelineSink* /*part*/) {}
  // Last: facts known once every file was read (files, ranks, the clock bound, filters), as the
  // trace's metadata; then flushes and closes. False with *error when writing failed at any point.
  virtual bool Finish(const std::vector<Arg>& details, std::string* error) = 0;
};

}  // namespace ncclscope::exporters::timeline
