// Writes a timeline as a native Perfetto trace (perfetto_trace.proto): a stream of TracePacket
// records, each appended as it comes, so memory stays one packet (plus the interned names) whatever
// the trace's size. The first packet is a clock snapshot that makes REALTIME the trace's clock, so
// viewers can show wall time; events carry wall-clock ns. Event names, categories and argument
// names are interned (declared once, then referred to by a small id), slices are BEGIN/END pairs
// (an open slice has no END, which Perfetto shows as "did not end"), flows are flow_ids on the
// BEGIN, counter samples ride on the slice events as extra counter values. Parts (NewPart) are
// sequences of their own, built in memory by other threads and appended whole. Not thread-safe.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "exporters/timeline/output_file.h"
#include "exporters/timeline/timeline_sink.h"

namespace ncclscope::exporters::timeline {

class PerfettoWriter final : public TimelineSink {
 public:
  PerfettoWriter() = default;
  // Opens `path` (through OutputFile); false with *error when it cannot.
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
  // A part is a sequence of its own (its own interned names), kept in memory.
  std::unique_ptr<TimelineSink> NewPart() override;
  void AppendPart(TimelineSink* part) override;

 private:
  explicit PerfettoWriter(uint32_t sequence_id) : sequence_id_(sequence_id), in_memory_(true) {
    memory_.reserve(kPartBytes);
  }
  // What a rank of 10,000 records takes: a part rarely grows (and copies itself) past it.
  static constexpr size_t kPartBytes = size_t{4} << 20;
  void Write(std::string_view bytes) {
    if (in_memory_) {
      memory_.append(bytes.data(), bytes.size());
    } else {
      out_.Write(bytes);
    }
  }

  // One kind of interned name (InternedData's field `field`), with the ids given so far.
  struct Interned {
    struct Hash {
      using is_transparent = void;
      size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
    };
    // The last name seen at each of a few addresses (Intern).
    struct Recent {
      const char* data = nullptr;
      size_t size = 0;
      std::string copy;
      uint64_t iid = 0;
    };
    static constexpr size_t kRecent = 64;
    explicit Interned(int interned_data_field) : field(interned_data_field) {}
    int field = 0;
    std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> ids;
    std::array<Recent, kRecent> recent{};
  };
  // The id of `name`, declaring it in the packet being built when it is new.
  uint64_t Intern(Interned* table, std::string_view name);
  uint64_t NewIid(Interned* table, std::string_view name);  // declares a name not seen yet
  // Appends the fields every packet has (sequence, flags, the names it declares) to body_.
  void AppendSequenceFields(uint32_t sequence_flags);
  // Wraps body_ (a TracePacket's fields) as one Trace.packet and writes it.
  void EmitPacket(uint32_t sequence_flags);
  // The TrackEvent in event_ as the packet at ts_ns.
  void EmitEvent(int64_t ts_ns);
  void AppendHeader(int type, uint64_t track, std::string_view name, std::string_view category);
  void AppendArgs(const std::vector<Arg>& args);
  void AppendCounter(const CounterSample* sample);

  OutputFile out_;
  uint32_t sequence_id_ = 1;
  bool in_memory_ = false;  // a part: packets go to memory_
  std::string memory_;
  bool state_cleared_ = false;  // the sequence's first packet said so
  uint32_t next_part_sequence_ = 2;
  int64_t origin_ns_ = 0;
  Interned names_{2};
  Interned categories_{1};
  Interned arg_names_{3};
  std::string body_;      // the packet being built
  std::string event_;     // its TrackEvent
  std::string interned_;  // the InternedData it declares
  std::string scratch_;   // a nested message (debug annotation, descriptor, interned entry)
  std::string framed_;    // the packet with its Trace.packet tag and length
};

}  // namespace ncclscope::exporters::timeline
