// EncodeFrDump: FrDump -> the value tree torch pickles, keys in the order torch inserts them
// (FlightRecorderDetail.hpp: getCollectiveTrace for an entry, dump_dict for the top level).
#include "trace/flight_recorder/fr_dump.h"

#include <map>
#include <tuple>

#include "trace/flight_recorder/fr_dump_versions.h"

namespace ncclscope::flight_recorder {

namespace {

struct FrameLess {
  bool operator()(const FrFrame& a, const FrFrame& b) const {
    return std::tie(a.name, a.filename, a.line) < std::tie(b.name, b.filename, b.line);
  }
};
using FrameUses = std::map<FrFrame, size_t, FrameLess>;

PickleValue Sizes(const std::vector<std::vector<int64_t>>& sizes) {
  PickleList outer;
  for (const auto& dims : sizes) {
    PickleList inner;
    for (int64_t d : dims) inner.items.emplace_back(d);
    outer.items.emplace_back(std::move(inner));
  }
  return outer;
}

PickleValue Strs(const std::vector<std::string>& strs) {
  PickleList list;
  for (const auto& s : strs) list.items.emplace_back(s);
  return list;
}

PickleValue OptionalTime(const std::optional<int64_t>& t) {
  return t ? PickleValue(*t) : PickleValue::None();
}

// "[0, 1, 2]", as c10d/TraceUtils.h ranks_str writes it.
std::string RanksText(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
  }
  return text + "]";
}

void Put(PickleDict* d, const char* key, PickleValue value) {
  d->items.emplace_back(std::string(key), std::move(value));
}

PickleValue Entry(const FrEntry& e, FrVersion v, const FrameUses& frame_uses) {
  PickleDict d;
  if (e.frames) {
    PickleList frames;
    for (const FrFrame& f : *e.frames) {
      PickleDict fd;
      Put(&fd, "name", f.name);
      Put(&fd, "filename", f.filename);
      Put(&fd, "line", f.line);
      fd.shared = frame_uses.at(f) > 1;
      frames.items.emplace_back(std::move(fd));
    }
    Put(&d, "frames", std::move(frames));
  }
  Put(&d, "record_id", e.record_id);
  Put(&d, "pg_id", e.pg_id);
  Put(&d, "process_group", PickleTuple{{e.pg_name, e.pg_desc}});
  if (v >= fr_versions::kCommLibAndThreads) {
    Put(&d, "thread_name", e.thread_name.value_or(""));
    Put(&d, "thread_id", e.thread_id.value_or(""));
  }
  Put(&d, "collective_seq_id", e.collective_seq_id);
  Put(&d, "p2p_seq_id", e.p2p_seq_id);
  Put(&d, "op_id", e.op_id);
  Put(&d, "profiling_name", e.profiling_name);
  Put(&d, "time_created_ns", e.time_created_ns);
  if (e.duration_ms) Put(&d, "duration_ms", *e.duration_ms);
  Put(&d, "input_sizes", Sizes(e.input_sizes));
  Put(&d, "input_dtypes", Strs(e.input_dtypes));
  Put(&d, "output_sizes", Sizes(e.output_sizes));
  Put(&d, "output_dtypes", Strs(e.output_dtypes));
  Put(&d, "state", FrStateName(e.state));
  Put(&d, "time_discovered_started_ns", OptionalTime(e.time_discovered_started_ns));
  Put(&d, "time_discovered_completed_ns", OptionalTime(e.time_discovered_completed_ns));
  Put(&d, "retired", e.retired);
  Put(&d, "timeout_ms", e.timeout_ms);
  Put(&d, "is_p2p", e.is_p2p);
  return d;
}

}  // namespace

PickleValue EncodeFrDump(const FrDump& dump) {
  const FrVersion v = ParseFrVersion(dump.version).value_or(fr_versions::kCommLibAndThreads);
  PickleDict top;
  Put(&top, "version", dump.version);
  PickleDict pg_config;
  for (const FrPgConfig& c : dump.pg_config) {
    PickleDict pg;
    Put(&pg, "name", c.name);
    Put(&pg, "desc", c.desc);
    Put(&pg, "ranks", RanksText(c.ranks));
    pg_config.items.emplace_back(c.key, std::move(pg));
  }
  Put(&top, "pg_config", std::move(pg_config));
  if (v >= fr_versions::kCommLibAndThreads) {
    Put(&top, "comm_lib_version", dump.comm_lib_version);
  } else if (v >= fr_versions::kNcclVersionKey) {
    Put(&top, "nccl_version", dump.comm_lib_version);
  }
  if (v >= fr_versions::kPgStatus) {
    PickleDict pg_status;
    for (const FrPgStatus& s : dump.pg_status) {
      PickleDict st;
      Put(&st, "last_enqueued_collective", s.last_enqueued_collective);
      Put(&st, "last_started_collective", s.last_started_collective);
      Put(&st, "last_completed_collective", s.last_completed_collective);
      pg_status.items.emplace_back(s.pg_id, std::move(st));
    }
    Put(&top, "pg_status", std::move(pg_status));
  }
  // torch's dumper holds each distinct frame once and puts that one dict into every entry whose
  // stack has it; its Pickler memoizes a dict held more than once (shared below).
  FrameUses frame_uses;
  for (const FrEntry& e : dump.entries) {
    if (!e.frames) continue;
    for (const FrFrame& f : *e.frames) ++frame_uses[f];
  }
  PickleList entries;
  entries.items.reserve(dump.entries.size());
  for (const FrEntry& e : dump.entries) entries.items.push_back(Entry(e, v, frame_uses));
  Put(&top, "entries", std::move(entries));
  return top;
}

}  // namespace ncclscope::flight_recorder
