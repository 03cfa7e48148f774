#include "exporters/timeline/chrome_json_writer.h"

#include <algorithm>

#include "hang_detector/verdicts/json_writer.h"

namespace ncclscope::exporters::timeline {

namespace {

using hang_detector::JsonWriter;

// Each argument as a key of the object being written.
void WriteValues(JsonWriter& w, const std::vector<Arg>& args) {
  for (const Arg& a : args) {
    w.Key(a.key);
    if (a.kind == Arg::Kind::kInt) {
      w.Int(a.int_value);
    } else {
      w.String(a.string_value);
    }
  }
}

void WriteArgs(JsonWriter& w, const std::vector<Arg>& args) {
  w.Key("args").BeginObject();
  WriteValues(w, args);
  w.EndObject();
}

// Perfetto reads a string flow id as hex (json_trace_parser.cc, MaybeExtractFlowIdentifier); a
// JSON number would lose the low bits of a 64-bit id in most readers.
std::string HexId(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

}  // namespace

void ChromeJsonWriter::Event(const std::string& json) {
  out_.Write(first_event_ ? "\n" : ",\n");
  first_event_ = false;
  out_.Write(json);
}

const ChromeJsonWriter::Thread& ChromeJsonWriter::ThreadOf(uint64_t track) {
  static const Thread kUnknown;
  const auto it = threads_.find(track);
  return it == threads_.end() ? kUnknown : it->second;
}

void ChromeJsonWriter::Begin(int64_t origin_ns, std::string_view description) {
  origin_ns_ = origin_ns;
  description_ = description;
  out_.Write("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
}

void ChromeJsonWriter::Process(uint64_t uuid, int pid, std::string_view name) {
  threads_[uuid] = Thread{pid, 0, {}};
  JsonWriter w(0);
  w.BeginObject().Key("ph").String("M").Key("name").String("process_name").Key("pid").Int(pid);
  w.Key("args").BeginObject().Key("name").String(name).EndObject().EndObject();
  Event(w.str());
  JsonWriter sort(0);
  sort.BeginObject().Key("ph").String("M").Key("name").String("process_sort_index");
  sort.Key("pid").Int(pid).Key("args").BeginObject().Key("sort_index").Int(pid).EndObject();
  sort.EndObject();
  Event(sort.str());
}

void ChromeJsonWriter::Track(uint64_t uuid, uint64_t /*process_uuid*/, int pid,
                             std::string_view name, int order) {
  const int tid = ++next_tid_[pid];
  threads_[uuid] = Thread{pid, tid, {}};
  JsonWriter w(0);
  w.BeginObject().Key("ph").String("M").Key("name").String("thread_name").Key("pid").Int(pid);
  w.Key("tid").Int(tid).Key("args").BeginObject().Key("name").String(name).EndObject();
  w.EndObject();
  Event(w.str());
  JsonWriter sort(0);
  sort.BeginObject().Key("ph").String("M").Key("name").String("thread_sort_index");
  sort.Key("pid").Int(pid).Key("tid").Int(tid);
  sort.Key("args").BeginObject().Key("sort_index").Int(order).EndObject().EndObject();
  Event(sort.str());
}

void ChromeJsonWriter::CounterTrack(uint64_t uuid, uint64_t /*process_uuid*/, int pid,
                                    std::string_view name) {
  // A 'C' event draws a counter of its process named "<name> <key>"; no thread needed.
  threads_[uuid] = Thread{pid, 0, std::string(name)};
}

void ChromeJsonWriter::Slice(const SliceEvent& s) {
  const Thread& t = ThreadOf(s.track);
  JsonWriter w(0);
  w.BeginObject().Key("ph").String(s.end_ns == kOpenEnd ? "B" : "X");
  w.Key("name").String(s.name).Key("cat").String(s.category);
  w.Key("pid").Int(t.pid).Key("tid").Int(t.tid).Key("ts").Double(Micros(s.begin_ns));
  if (s.end_ns != kOpenEnd) w.Key("dur").Double(static_cast<double>(s.end_ns - s.begin_ns) * 1e-3);
  static const std::vector<Arg> kNoArgs;
  WriteArgs(w, s.args != nullptr ? *s.args : kNoArgs);
  w.EndObject();
  Event(w.str());
  if (s.flow_id != 0) {
    // The middle of a closed slice, the start of an open one: either lies inside it.
    const int64_t at = s.end_ns == kOpenEnd ? s.begin_ns : s.begin_ns + (s.end_ns - s.begin_ns) / 2;
    anchors_.push_back({s.flow_id, at, t.pid, t.tid});
  }
  if (s.at_begin != nullptr) Counter(*s.at_begin, s.begin_ns);
  if (s.at_end != nullptr && s.end_ns != kOpenEnd) Counter(*s.at_end, s.end_ns);
}

void ChromeJsonWriter::Instant(uint64_t track, int64_t ts_ns, std::string_view name,
                               std::string_view category, const std::vector<Arg>& args) {
  const Thread& t = ThreadOf(track);
  JsonWriter w(0);
  w.BeginObject().Key("ph").String("i").Key("s").String("t");
  w.Key("name").String(name).Key("cat").String(category);
  w.Key("pid").Int(t.pid).Key("tid").Int(t.tid).Key("ts").Double(Micros(ts_ns));
  WriteArgs(w, args);
  w.EndObject();
  Event(w.str());
}

void ChromeJsonWriter::Counter(const CounterSample& sample, int64_t ts_ns) {
  const Thread& t = ThreadOf(sample.track);
  JsonWriter w(0);
  w.BeginObject().Key("ph").String("C").Key("name").String(t.counter_name);
  w.Key("pid").Int(t.pid).Key("ts").Double(Micros(ts_ns));
  w.Key("args").BeginObject().Key("value").Int(sample.value).EndObject().EndObject();
  Event(w.str());
}

bool ChromeJsonWriter::Finish(const std::vector<Arg>& details, std::string* error) {
  std::sort(anchors_.begin(), anchors_.end(), [](const FlowAnchor& a, const FlowAnchor& b) {
    return a.flow_id != b.flow_id ? a.flow_id < b.flow_id : a.ts_ns < b.ts_ns;
  });
  for (size_t i = 0; i < anchors_.size();) {
    size_t end = i + 1;
    while (end < anchors_.size() && anchors_[end].flow_id == anchors_[i].flow_id) ++end;
    if (end - i >= 2) {  // one slice alone has nothing to point to
      const std::string id = HexId(anchors_[i].flow_id);
      for (size_t k = i; k < end; ++k) {
        const FlowAnchor& a = anchors_[k];
        JsonWriter w(0);
        w.BeginObject().Key("ph").String(k == i ? "s" : (k + 1 == end ? "f" : "t"));
        w.Key("name").String("collective").Key("cat").String("flow").Key("id").String(id);
        w.Key("pid").Int(a.pid).Key("tid").Int(a.tid).Key("ts").Double(Micros(a.ts_ns));
        if (k + 1 == end) w.Key("bp").String("e");  // bind to the slice around it
        w.EndObject();
        Event(w.str());
      }
    }
    i = end;
  }
  anchors_.clear();
  JsonWriter w(0);
  w.BeginObject();
  w.Key("origin_ns").Int(origin_ns_);
  w.Key("description").String(description_);
  WriteValues(w, details);
  w.EndObject();
  out_.Write("\n],\"metadata\":");
  out_.Write(w.str());
  out_.Write("}\n");
  return out_.Commit(error);
}

}  // namespace ncclscope::exporters::timeline
