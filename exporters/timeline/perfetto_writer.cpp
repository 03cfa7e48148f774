#include "exporters/timeline/perfetto_writer.h"

#include <cstring>

#include "exporters/timeline/perfetto_trace.pb.h"
#include "exporters/timeline/proto_append.h"

namespace ncclscope::exporters::timeline {

namespace {

namespace pb = ncclscope::perfetto;

constexpr uint32_t kStateCleared = 1;   // SEQ_INCREMENTAL_STATE_CLEARED: interning starts here
constexpr uint32_t kNeedsState = 2;     // SEQ_NEEDS_INCREMENTAL_STATE: this packet uses iids
constexpr uint32_t kClockRealtime = 1;  // BuiltinClock
constexpr uint32_t kClockBoottime = 6;  // the clock of packets without timestamp_clock_id
constexpr uint64_t kMetadataTrack = 1;  // below every rank's uuid (timeline_builder.cpp)

}  // namespace

uint64_t PerfettoWriter::Intern(Interned* table, std::string_view name) {
  // The builder passes the same few strings (literals, cached names) millions of times: a hit on
  // the same pointer and length skips hashing; the bytes are still compared, so a string reused
  // at that address for another name cannot take its id.
  Interned::Recent& recent =
      table->recent[(reinterpret_cast<uintptr_t>(name.data()) >> 3) % Interned::kRecent];
  if (recent.data == name.data() && recent.size == name.size() &&
      std::memcmp(recent.copy.data(), name.data(), name.size()) == 0) {
    return recent.iid;
  }
  uint64_t iid = 0;
  const auto it = table->ids.find(name);
  if (it != table->ids.end()) {
    iid = it->second;
  } else {
    iid = NewIid(table, name);
  }
  recent = {name.data(), name.size(), std::string(name), iid};
  return iid;
}

uint64_t PerfettoWriter::NewIid(Interned* table, std::string_view name) {
  const uint64_t iid = table->ids.size() + 1;
  table->ids.emplace(std::string(name), iid);
  scratch_.clear();
  ProtoAppend entry(&scratch_);
  entry.Varint(pb::EventName::kIidFieldNumber, iid);   // EventCategory and DebugAnnotationName
  entry.Bytes(pb::EventName::kNameFieldNumber, name);  // share these numbers
  ProtoAppend(&interned_).Bytes(table->field, scratch_);
  return iid;
}

void PerfettoWriter::AppendSequenceFields(uint32_t sequence_flags) {
  // A sequence's first packet starts its interned state afresh (the main writer's is the clock
  // snapshot; a part's is its process descriptor).
  if (!state_cleared_) {
    sequence_flags |= kStateCleared;
    state_cleared_ = true;
  }
  ProtoAppend packet(&body_);
  packet.Varint(pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, sequence_id_);
  packet.Varint(pb::TracePacket::kSequenceFlagsFieldNumber, sequence_flags);
  if (!interned_.empty()) {
    packet.Bytes(pb::TracePacket::kInternedDataFieldNumber, interned_);
    interned_.clear();
  }
}

void PerfettoWriter::EmitPacket(uint32_t sequence_flags) {
  AppendSequenceFields(sequence_flags);
  framed_.clear();
  ProtoAppend(&framed_).Header(pb::Trace::kPacketFieldNumber, body_.size());
  Write(framed_);
  Write(body_);
  body_.clear();
}

void PerfettoWriter::EmitEvent(int64_t ts_ns) {
  // The packet is its timestamp, the event and the sequence fields; the event's bytes go to the
  // file as they are instead of being copied into the packet first.
  ProtoAppend packet(&body_);
  packet.Varint(pb::TracePacket::kTimestampFieldNumber, static_cast<uint64_t>(ts_ns));
  packet.Header(pb::TracePacket::kTrackEventFieldNumber, event_.size());
  const size_t before_event = body_.size();
  AppendSequenceFields(kNeedsState);
  framed_.clear();
  ProtoAppend(&framed_).Header(pb::Trace::kPacketFieldNumber, body_.size() + event_.size());
  const std::string_view body = body_;
  Write(framed_);
  Write(body.substr(0, before_event));
  Write(event_);
  Write(body.substr(before_event));
  body_.clear();
  event_.clear();
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
  EmitPacket(kStateCleared);

  // The metadata: a top-level track whose description says how the trace was made; Finish adds
  // an instant at the origin with the facts as arguments.
  scratch_.clear();
  ProtoAppend track(&scratch_);
  track.Varint(pb::TrackDescriptor::kUuidFieldNumber, kMetadataTrack);
  track.Bytes(pb::TrackDescriptor::kNameFieldNumber, "ncclscope");
  track.Bytes(pb::TrackDescriptor::kDescriptionFieldNumber, description);
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket(kNeedsState);
}

std::unique_ptr<TimelineSink> PerfettoWriter::NewPart() {
  // Sequence ids are 32-bit and never 0; 2^32 parts would be 2^32 ranks.
  return std::unique_ptr<TimelineSink>(new PerfettoWriter(next_part_sequence_++));
}

void PerfettoWriter::AppendPart(TimelineSink* part) {
  auto* p = static_cast<PerfettoWriter*>(part);  // made by NewPart
  if (in_memory_) {
    Write(p->memory_);
  } else {
    out_.WriteLarge(p->memory_);
  }
  p->memory_.clear();
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
  // Child tracks keep the order the builder gives them (verdicts, host threads, streams, ...).
  track.Varint(pb::TrackDescriptor::kChildOrderingFieldNumber, pb::TrackDescriptor::EXPLICIT);
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket(kNeedsState);
}

void PerfettoWriter::Track(uint64_t uuid, uint64_t process_uuid, int /*pid*/, std::string_view name,
                           int order) {
  scratch_.clear();
  ProtoAppend track(&scratch_);
  track.Varint(pb::TrackDescriptor::kUuidFieldNumber, uuid);
  track.Varint(pb::TrackDescriptor::kParentUuidFieldNumber, process_uuid);
  track.Bytes(pb::TrackDescriptor::kNameFieldNumber, name);
  track.SignedInt(pb::TrackDescriptor::kSiblingOrderRankFieldNumber, order);
  // Two streams' tracks may share a name; never merge tracks of one rank.
  track.Varint(pb::TrackDescriptor::kSiblingMergeBehaviorFieldNumber,
               pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
  ProtoAppend(&body_).Bytes(pb::TracePacket::kTrackDescriptorFieldNumber, scratch_);
  EmitPacket(kNeedsState);
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
  EmitPacket(kNeedsState);
}

void PerfettoWriter::AppendHeader(int type, uint64_t track, std::string_view name,
                                  std::string_view category) {
  ProtoAppend event(&event_);
  event.Varint(pb::TrackEvent::kTypeFieldNumber, static_cast<uint64_t>(type));
  event.Varint(pb::TrackEvent::kTrackUuidFieldNumber, track);
  if (name.empty()) return;
  event.Varint(pb::TrackEvent::kNameIidFieldNumber, Intern(&names_, name));
  event.Varint(pb::TrackEvent::kCategoryIidsFieldNumber, Intern(&categories_, category));
}

void PerfettoWriter::AppendArgs(const std::vector<Arg>& args) {
  for (const Arg& a : args) {
    const uint64_t name_iid = Intern(&arg_names_, a.key);
    scratch_.clear();
    ProtoAppend annotation(&scratch_);
    annotation.Varint(pb::DebugAnnotation::kNameIidFieldNumber, name_iid);
    if (a.kind == Arg::Kind::kInt) {
      annotation.SignedInt(pb::DebugAnnotation::kIntValueFieldNumber, a.int_value);
    } else {
      annotation.Bytes(pb::DebugAnnotation::kStringValueFieldNumber, a.string_value);
    }
    ProtoAppend(&event_).Bytes(pb::TrackEvent::kDebugAnnotationsFieldNumber, scratch_);
  }
}

void PerfettoWriter::AppendCounter(const CounterSample* sample) {
  if (sample == nullptr) return;
  ProtoAppend event(&event_);
  event.Varint(pb::TrackEvent::kExtraCounterTrackUuidsFieldNumber, sample->track);
  event.SignedInt(pb::TrackEvent::kExtraCounterValuesFieldNumber, sample->value);
}

void PerfettoWriter::Slice(const SliceEvent& s) {
  AppendHeader(pb::TrackEvent::TYPE_SLICE_BEGIN, s.track, s.name, s.category);
  if (s.flow_id != 0) ProtoAppend(&event_).Fixed64(pb::TrackEvent::kFlowIdsFieldNumber, s.flow_id);
  if (s.args != nullptr) AppendArgs(*s.args);
  AppendCounter(s.at_begin);
  EmitEvent(s.begin_ns);
  if (s.end_ns == kOpenEnd) return;
  AppendHeader(pb::TrackEvent::TYPE_SLICE_END, s.track, {}, {});
  AppendCounter(s.at_end);
  EmitEvent(s.end_ns);
}

void PerfettoWriter::Instant(uint64_t track, int64_t ts_ns, std::string_view name,
                             std::string_view category, const std::vector<Arg>& args) {
  AppendHeader(pb::TrackEvent::TYPE_INSTANT, track, name, category);
  AppendArgs(args);
  EmitEvent(ts_ns);
}

}  // namespace ncclscope::exporters::timeline
