// A Perfetto trace written by `ncclscope timeline`, decoded with the classes generated from the
// project's perfetto_trace.proto and put back together: interned names resolved, tracks, slices
// (BEGIN matched with END per track, as Perfetto's importer matches them), instants, counter
// samples and flows. For tests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ncclscope::testing {

struct DecodedTrack {
  uint64_t uuid = 0;
  uint64_t parent = 0;
  std::string name;
  bool is_process = false;
  int pid = -1;  // processes: the rank
  bool is_counter = false;
};

struct DecodedEvent {
  uint64_t track = 0;
  int64_t begin_ns = 0;
  std::optional<int64_t> end_ns;  // slices: nullopt when it never ended
  std::string name;
  std::string category;
  std::map<std::string, std::string> args;  // every value as text
  std::vector<uint64_t> flows;
};

struct DecodedTrace {
  bool realtime_clock = false;  // the clock snapshot made REALTIME the trace's clock
  std::map<uint64_t, DecodedTrack> tracks;
  std::vector<DecodedEvent> slices;
  std::vector<DecodedEvent> instants;
  struct CounterValue {
    uint64_t track;
    int64_t ts_ns;
    int64_t value;
  };
  std::vector<CounterValue> counters;  // in file order
  std::string error;                   // why decoding failed, or an END without its BEGIN

  // The process track a track belongs to (itself for a process); 0 when none.
  uint64_t ProcessOf(uint64_t track) const;
  int PidOf(uint64_t track) const;
  // The communicator of a slice: named after " · " in a call's name ("allreduce · tp"), before
  // " · stream" in a device track's name; "" when none.
  std::string CommOf(const DecodedEvent& slice) const;
  // Perfetto nests the slices of one track by time: two that overlap without nesting would be
  // drawn wrong, and nothing may follow a slice that never ended. The first such pair, or "".
  std::string OverlapError() const;
};

DecodedTrace DecodePerfettoFile(const std::string& path);

}  // namespace ncclscope::testing
