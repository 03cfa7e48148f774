#include "exporters/timeline/perfetto_writer.h"

#include "exporters/timeline/perfetto_trace.pb.h"
#include "exporters/timeline/proto_append.h"

namespace ncclscope::exporters::timeline {

namespace {

namespace pb = ncclscope::perfetto;

// Every packet comes from this one writer: one sequence. Perfetto requires a non-zero id.
constexpr uint32_t kSequenceId = 1;
constexpr uint32_t kClockRealtime = 1;  // BuiltinClock
constexpr uint32_t kClockBoottime = 6;  // the clock of packets without timestamp_clock_id
constexpr uint64_t kMetadataTrack = 1;  // below every rank's uuid (timeline_builder.cpp)

}  // namespace

void PerfettoWriter::EmitPacket() {
  ProtoAppend(&body_).Varint(pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, kSequenceId);
  framed_.clear();
  ProtoAppend(&framed_).Bytes(pb::Trace::kPacketFieldNumber, body_);
  out_.Write(framed_);
  body_.clear();
}

void PerfettoWriter::EmitEvent(int64_t ts_ns) {
  ProtoAppend packet(&body_);
  packet.Varint(pb::TracePacket::kTimestampFieldNumber, static_cast<uint64_t>(ts_ns));
  packet.Bytes(pb::TracePacket::kTrackEventFieldNumber, event_);
  event_.clear();
  EmitPacket();
}

void PerfettoWriter::Begin(int64_t origin_ns, std::string_view description) {
  origin_ns_ = origin_ns;
  // Packets carry wall-clock ns without a clock id, i.e. in BOOTTIME's domain; the snapshot maps
  // that domain one to one onto REALTIME and makes REALTIME the trace's clock.
  std::string clocks;
  for (uint32_t id : {kClockRealtime, kClockBoottime}) {
    scratch_.clear();
    ProtoAppend clock(&scratch_);
    clock.Varint(pb::ClockSnapshot::Clock::kClockIdFieldNumber, id);
    clock.Varint(pb::ClockSnapshot::Clock::kTimestampFieldNumber, static_cast<uint64_t>(origin_ns));
    ProtoAppend(&clocks).Bytes(pb::ClockSnapshot::kClocksFieldNumber, scratch_);
  }
  ProtoAppend(&clocks).Varint(pb::ClockSnapshot::kPrimaryTraceClockFieldNumber, kClockRealtime);
  ProtoAppend packet(&body_);
  packet.Varint(pb::TracePacket::kTimestampFieldNumber, static_cast<uint64_t>(origin_ns));
  packet.Bytes(pb::TracePacket::kClockSnapshotFieldNumber, clocks);
  EmitPacket();

  // The metadata: a top-level track whose description says how the trace was made; Finish adds
  // an instant at the origin with the facts as arguments.
  scratch_.clear();
  ProtoAppend track(&scratch_);
  track.Varint(pb::TrackDescriptor::kUuidFieldNumber, kMetadataTrack);
  track.Bytes(pb::TrackDescriptor::kNameFieldNumber, "ncclscope");
  track.Bytes(pb::TrackDescriptor::kDescriptionFieldNumber, description);
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket();
}

bool PerfettoWriter::Finish(const std::vector<Arg>& details, std::string* error) {
  Instant(kMetadataTrack, origin_ns_, "trace metadata", "ncclscope", details);
  return out_.Commit(error);
}

void PerfettoWriter::Process(uint64_t uuid, int pid, std::string_view name) {
  std::string process;
  ProtoAppend p(&process);
  p.SignedInt(pb::ProcessDescriptor::kPidFieldNumber, pid);
  p.Bytes(pb::ProcessDescriptor::kProcessNameFieldNumber, name);
  scratch_.clear();
  ProtoAppend track(&scratch_);
  track.Varint(pb::TrackDescriptor::kUuidFieldNumber, uuid);
  track.Bytes(pb::TrackDescriptor::kProcessFieldNumber, process);
  // Child tracks keep the order the builder gives them (host threads, then streams, ...).
  track.Varint(pb::TrackDescriptor::kChildOrderingFieldNumber, pb::TrackDescriptor::EXPLICIT);
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket();
}

void PerfettoWriter::Track(uint64_t uuid, uint64_t process_uuid, int /*pid*/, std::string_view name,
                           int order) {
  scratch_.clear();
  ProtoAppend track(&scratch_);
  track.Varint(pb::TrackDescriptor::kUuidFieldNumber, uuid);
  track.Varint(pb::TrackDescriptor::kParentUuidFieldNumber, process_uuid);
  track.Bytes(pb::TrackDescriptor::kNameFieldNumber, name);
  track.SignedInt(pb::TrackDescriptor::kSiblingOrderRankFieldNumber, order);
  // Two streams' tracks may share a name prefix; never merge tracks of one rank.
  track.Varint(pb::TrackDescriptor::kSiblingMergeBehaviorFieldNumber,
               pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket();
}

void PerfettoWriter::CounterTrack(uint64_t uuid, uint64_t process_uuid, int /*pid*/,
                                  std::string_view name) {
  scratch_.clear();
  ProtoAppend track(&scratch_);
  track.Varint(pb::TrackDescriptor::kUuidFieldNumber, uuid);
  track.Varint(pb::TrackDescriptor::kParentUuidFieldNumber, process_uuid);
  track.Bytes(pb::TrackDescriptor::kNameFieldNumber, name);
  track.Bytes(pb::TrackDescriptor::kCounterFieldNumber, "");
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket();
}

void PerfettoWriter::AppendArgs(const std::vector<Arg>& args) {
  for (const Arg& a : args) {
    scratch_.clear();
    ProtoAppend annotation(&scratch_);
    annotation.Bytes(pb::DebugAnnotation::kNameFieldNumber, a.key);
    if (a.kind == Arg::Kind::kInt) {
      annotation.SignedInt(pb::DebugAnnotation::kIntValueFieldNumber, a.int_value);
    } else {
      annotation.Bytes(pb::DebugAnnotation::kStringValueFieldNumber, a.string_value);
    }
    ProtoAppend(&event_).Bytes(pb::TrackEvent::kDebugAnnotationsFieldNumber, scratch_);
  }
}

void PerfettoWriter::Slice(uint64_t track, int64_t begin_ns, int64_t end_ns, std::string_view name,
                           std::string_view category, const std::vector<Arg>& args,
                           uint64_t flow_id) {
  ProtoAppend begin(&event_);
  begin.Varint(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_BEGIN);
  begin.Varint(pb::TrackEvent::kTrackUuidFieldNumber, track);
  begin.Bytes(pb::TrackEvent::kNameFieldNumber, name);
  begin.Bytes(pb::TrackEvent::kCategoriesFieldNumber, category);
  if (flow_id != 0) begin.Fixed64(pb::TrackEvent::kFlowIdsFieldNumber, flow_id);
  AppendArgs(args);
  EmitEvent(begin_ns);
  if (end_ns == kOpenEnd) return;
  ProtoAppend end(&event_);
  end.Varint(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_END);
  end.Varint(pb::TrackEvent::kTrackUuidFieldNumber, track);
  EmitEvent(end_ns);
}

void PerfettoWriter::Instant(uint64_t track, int64_t ts_ns, std::string_view name,
                             std::string_view category, const std::vector<Arg>& args) {
  ProtoAppend instant(&event_);
  instant.Varint(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_INSTANT);
  instant.Varint(pb::TrackEvent::kTrackUuidFieldNumber, track);
  instant.Bytes(pb::TrackEvent::kNameFieldNumber, name);
  instant.Bytes(pb::TrackEvent::kCategoriesFieldNumber, category);
  AppendArgs(args);
  EmitEvent(ts_ns);
}

void PerfettoWriter::Counter(uint64_t track, int64_t ts_ns, int64_t value) {
  ProtoAppend counter(&event_);
  counter.Varint(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_COUNTER);
  counter.Varint(pb::TrackEvent::kTrackUuidFieldNumber, track);
  counter.SignedInt(pb::TrackEvent::kCounterValueFieldNumber, value);
  EmitEvent(ts_ns);
}

}  // namespace ncclscope::exporters::timeline
