#include "tests/exporters/timeline/decoded_trace.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "exporters/timeline/perfetto_trace.pb.h"

namespace ncclscope::testing {

namespace pb = ncclscope::perfetto;

uint64_t DecodedTrace::ProcessOf(uint64_t track) const {
  for (int hops = 0; hops < 8; ++hops) {
    const auto it = tracks.find(track);
    if (it == tracks.end()) return 0;
    if (it->second.is_process) return track;
    track = it->second.parent;
  }
  return 0;
}

int DecodedTrace::PidOf(uint64_t track) const {
  const auto it = tracks.find(ProcessOf(track));
  return it == tracks.end() ? -1 : it->second.pid;
}

std::string DecodedTrace::CommOf(const DecodedEvent& slice) const {
  constexpr std::string_view kSep = " · ";
  if (slice.category == "call") {
    const size_t at = slice.name.find(kSep);
    return at == std::string::npos ? "" : slice.name.substr(at + kSep.size());
  }
  const auto it = tracks.find(slice.track);
  if (it == tracks.end()) return "";
  const size_t at = it->second.name.find(" · stream");
  return at == std::string::npos ? "" : it->second.name.substr(0, at);
}

std::string DecodedTrace::OverlapError() const {
  std::map<uint64_t, std::vector<const DecodedEvent*>> by_track;
  for (const DecodedEvent& s : slices) by_track[s.track].push_back(&s);
  for (auto& [track, list] : by_track) {
    std::sort(list.begin(), list.end(), [](const DecodedEvent* a, const DecodedEvent* b) {
      return a->begin_ns < b->begin_ns;
    });
    for (size_t i = 1; i < list.size(); ++i) {
      const DecodedEvent& prev = *list[i - 1];
      if (!prev.end_ns || *prev.end_ns > list[i]->begin_ns) {
        return prev.name + " overlaps " + list[i]->name + " on track " + std::to_string(track);
      }
    }
  }
  return "";
}

DecodedTrace DecodePerfettoFile(const std::string& path) {
  DecodedTrace out;
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  pb::Trace trace;
  if (!in || !trace.ParseFromString(bytes.str())) {
    out.error = path + ": not a Perfetto trace";
    return out;
  }
  std::map<uint64_t, std::vector<size_t>> open;  // per track: slices begun, not yet ended
  // Interned names, per sequence as Perfetto keeps them: event names, categories, arguments.
  using Key = std::pair<uint32_t, uint64_t>;  // (sequence, iid)
  std::map<Key, std::string> names, categories, arg_names;
  std::set<uint32_t> cleared;  // sequences whose interned state was started
  for (const pb::TracePacket& p : trace.packet()) {
    const uint32_t seq = p.trusted_packet_sequence_id();
    if (seq == 0) {
      out.error = "a packet without a sequence id";
      return out;
    }
    if ((p.sequence_flags() & 1) != 0) {
      if (!cleared.insert(seq).second) {
        out.error = "sequence " + std::to_string(seq) + " cleared its state twice";
        return out;
      }
    }
    if ((p.sequence_flags() & 2) != 0 && cleared.count(seq) == 0) {
      out.error = "a packet needs interned state before its sequence cleared it";
      return out;
    }
    for (const pb::EventName& n : p.interned_data().event_names()) {
      names[{seq, n.iid()}] = n.name();
    }
    for (const pb::EventCategory& c : p.interned_data().event_categories()) {
      categories[{seq, c.iid()}] = c.name();
    }
    for (const pb::DebugAnnotationName& n : p.interned_data().debug_annotation_names()) {
      arg_names[{seq, n.iid()}] = n.name();
    }
    if (p.has_clock_snapshot()) {
      out.realtime_clock = p.clock_snapshot().primary_trace_clock() == 1;
    }
    if (p.has_track_descriptor()) {
      const pb::TrackDescriptor& d = p.track_descriptor();
      DecodedTrack t;
      t.uuid = d.uuid();
      t.parent = d.parent_uuid();
      t.name = d.name();
      t.is_process = d.has_process();
      if (t.is_process) {
        t.pid = d.process().pid();
        t.name = d.process().process_name();
      }
      t.is_counter = d.has_counter();
      out.tracks[t.uuid] = t;
    }
    if (!p.has_track_event()) continue;
    const pb::TrackEvent& e = p.track_event();
    DecodedEvent ev;
    ev.track = e.track_uuid();
    ev.begin_ns = static_cast<int64_t>(p.timestamp());
    ev.name = e.has_name_iid() ? names[{seq, e.name_iid()}] : e.name();
    if (e.category_iids_size() > 0) ev.category = categories[{seq, e.category_iids(0)}];
    if (e.categories_size() > 0) ev.category = e.categories(0);
    for (const pb::DebugAnnotation& a : e.debug_annotations()) {
      ev.args[a.has_name_iid() ? arg_names[{seq, a.name_iid()}] : a.name()] =
          a.has_string_value() ? a.string_value() : std::to_string(a.int_value());
    }
    for (int i = 0; i < e.extra_counter_values_size(); ++i) {
      if (i >= e.extra_counter_track_uuids_size()) {
        out.error = "a counter value without its track";
        return out;
      }
      out.counters.push_back(
          {e.extra_counter_track_uuids(i), ev.begin_ns, e.extra_counter_values(i)});
    }
    ev.flows.assign(e.flow_ids().begin(), e.flow_ids().end());
    switch (e.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN:
        open[ev.track].push_back(out.slices.size());
        out.slices.push_back(ev);
        break;
      case pb::TrackEvent::TYPE_SLICE_END: {
        std::vector<size_t>& stack = open[ev.track];
        if (stack.empty()) {
          out.error = "an END without a BEGIN on track " + std::to_string(ev.track);
          return out;
        }
        out.slices[stack.back()].end_ns = ev.begin_ns;
        stack.pop_back();
        break;
      }
      case pb::TrackEvent::TYPE_INSTANT:
        out.instants.push_back(ev);
        break;
      default:
        out.error = "an event of unknown type";
        return out;
    }
  }
  return out;
}

}  // namespace ncclscope::testing
