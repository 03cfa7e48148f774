#include "tools/record_printer.h"

#include <fmt/format.h>

#include <cstring>

#include "tools/probe_record_fields.h"
#include "trace/nccl_names.h"
#include "trace/record.h"
#include "trace/ring_layout.h"

namespace ncclscope::tools {
namespace {

using trace::OpType;

std::string RankText(int rank) {
  return rank < 0 ? "?" : std::to_string(rank);
}

std::string CommName(const CommNames& names, uint64_t id) {
  if (id == 0) return "-";
  auto it = names.find(id);
  return it == names.end() ? HexId(id) : it->second;
}

const char* OriginName(uint32_t origin) {
  switch (origin) {
    case trace::kCommFromUniqueId:
      return "unique_id";
    case trace::kCommFromSplit:
      return "split";
    case trace::kCommFromShrink:
      return "shrink";
    case trace::kCommFromInitAll:
      return "init_all";
    default:
      return "unknown";
  }
}

// Device completion relative to the call's entry, the latency a user cares about.
std::string DeviceText(const trace::RecordData& r) {
  if (r.t_device_done_ns == trace::kDoneUntracked) return "untracked";
  if (trace::IsPending(r.t_device_done_ns)) return "pending";
  return fmt::format("{:.1f}us", (r.t_device_done_ns - r.t_enter_ns) / 1e3);
}

const char* DeviceState(const trace::RecordData& r) {
  if (r.t_device_done_ns == trace::kDoneUntracked) return "untracked";
  return trace::IsPending(r.t_device_done_ns) ? "pending" : "done";
}

}  // namespace

CommNames CommNamesOf(const trace::RingSnapshot& file) {
  CommNames names;
  for (const auto& c : file.comms) names[c.id] = c.name.empty() ? HexId(c.id) : c.name;
  return names;
}

std::string HexId(uint64_t id) {
  return fmt::format("{:016x}", id);
}

std::string HeaderText(const trace::RingSnapshot& f) {
  // numerics_skipped only where NCCLSCOPE_NUMERICS missed a sample, so other headers read as
  // before.
  const std::string numerics =
      f.numerics_skipped == 0 ? "" : fmt::format(" numerics_skipped {}", f.numerics_skipped);
  // Likewise a presence file's mark: its process was started as the rank and never called NCCL.
  const char* presence =
      (f.flags & trace::kHeaderPresence) != 0 ? " presence (no NCCL call yet)" : "";
  return fmt::format(
      "# rank {} local_rank {} world_size {} host {} pid {} job {} nccl {} records {} "
      "overwritten {} dropped {} torn {} untracked_completions {} unknown_comm_records {}{}{} "
      "file {}",
      RankText(f.global_rank), RankText(f.local_rank), RankText(f.world_size), f.host, f.pid,
      f.job_id.empty() ? "-" : f.job_id, f.nccl_version, f.records.size(), f.overwritten,
      f.dropped_records, f.torn_records, f.untracked_completions, f.unknown_comm_records, numerics,
      presence, f.path);
}

std::string CommText(const trace::CommInfo& c) {
  return fmt::format("# comm {} id {} rank {}/{} origin {} parent {} color {} key {}",
                     c.name.empty() ? "-" : c.name, HexId(c.id), c.rank, c.nranks,
                     OriginName(c.origin), c.parent_id == 0 ? "-" : HexId(c.parent_id), c.color,
                     c.key);
}

std::string RecordText(const trace::RingSnapshot& f, const CommNames& names,
                       const trace::StoredRecord& rec) {
  const trace::RecordData& r = rec.data;
  const auto op = static_cast<OpType>(r.op);
  std::string line = fmt::format("rank {} #{} t={:.6f}s {} comm={}", RankText(f.global_rank),
                                 rec.index, (r.t_enter_ns - f.start_monotonic_ns) / 1e9,
                                 trace::OpTypeName(op), CommName(names, r.comm_id));
  if (trace::IsCollective(op) || trace::IsP2P(op)) {
    line += fmt::format(" seq={} count={} dtype={}", r.seq, r.count, trace::DataTypeName(r.dtype));
    if (r.redop >= 0) line += " redop=" + trace::RedOpText(r.redop);
    if (r.peer >= 0) line += fmt::format(" {}={}", trace::IsP2P(op) ? "peer" : "root", r.peer);
    if (r.group_id != 0) line += fmt::format(" group={}", r.group_id);
    line += fmt::format(" stream={:#x} device={}", r.stream, DeviceText(r));
  } else if (IsProbeEventRecord(r)) {
    line += ProbeFieldsText(r);
  } else if (r.group_id != 0 && !trace::NvtxNames::IsNameRecord(r)) {  // names fill group_id
    line += fmt::format(" group={}", r.group_id);
  }
  // The watchdog's own abort (NCCLSCOPE_ON_HANG=abort), not the application's.
  if ((r.flags & trace::kFlagByWatchdog) != 0) line += " by=watchdog";
  if (r.result == trace::kResultInCall) {
    line += " host=in-call";  // the rank is still inside this call (or died in it)
  } else {
    line += fmt::format(" host={:.1f}us result={}", (r.t_exit_ns - r.t_enter_ns) / 1e3,
                        trace::ResultName(r.result));
  }
  return line;
}

nlohmann::json HeaderJson(const trace::RingSnapshot& f) {
  return {{"type", "header"},
          {"file", f.path},
          {"format_version", f.format_version},
          {"rank", f.global_rank},
          {"local_rank", f.local_rank},
          {"world_size", f.world_size},
          {"host", f.host},
          {"pid", f.pid},
          {"job_id", f.job_id},
          {"restart", f.restart},
          {"nccl_version", f.nccl_version},
          {"start_realtime_ns", f.start_realtime_ns},
          {"start_monotonic_ns", f.start_monotonic_ns},
          {"heartbeat_monotonic_ns", f.heartbeat_monotonic_ns},
          {"flags", f.flags},
          {"watchdog_aborted", (f.flags & trace::kHeaderWatchdogAborted) != 0},
          {"presence", (f.flags & trace::kHeaderPresence) != 0},
          {"record_capacity", f.record_capacity},
          {"records", f.records.size()},
          {"write_pos", f.write_pos},
          {"overwritten", f.overwritten},
          {"dropped_records", f.dropped_records},
          {"dropped_comms", f.dropped_comms},
          {"torn_records", f.torn_records},
          {"untracked_completions", f.untracked_completions},
          {"unknown_comm_records", f.unknown_comm_records},
          {"numerics_skipped", f.numerics_skipped}};
}

nlohmann::json CommJson(const trace::RingSnapshot& f, const trace::CommInfo& c) {
  return {{"type", "comm"},
          {"rank", f.global_rank},
          {"name", c.name},
          {"comm_id", HexId(c.id)},
          {"parent_id", c.parent_id == 0 ? "" : HexId(c.parent_id)},
          {"origin", OriginName(c.origin)},
          {"comm_rank", c.rank},
          {"comm_nranks", c.nranks},
          {"color", c.color},
          {"key", c.key},
          {"split_index", c.split_index},
          {"cuda_device", c.cuda_device},
          {"created_monotonic_ns", c.created_monotonic_ns}};
}

nlohmann::json RecordJson(const trace::RingSnapshot& f, const CommNames& names,
                          const trace::StoredRecord& rec) {
  const trace::RecordData& r = rec.data;
  nlohmann::json j = {{"type", "record"},
                      {"rank", f.global_rank},
                      {"index", rec.index},
                      {"op", trace::OpTypeName(static_cast<OpType>(r.op))},
                      {"comm_id", r.comm_id == 0 ? "" : HexId(r.comm_id)},
                      {"comm_name", r.comm_id == 0 ? "" : CommName(names, r.comm_id)},
                      {"seq", r.seq},
                      {"group_id", r.group_id},
                      {"count", r.count},
                      {"dtype", trace::DataTypeName(r.dtype)},
                      {"redop", trace::RedOpName(r.redop)},
                      {"peer", r.peer},
                      {"stream", r.stream},
                      {"aux", r.aux},
                      {"t_enter_ns", r.t_enter_ns},
                      {"t_exit_ns", r.t_exit_ns},
                      {"device", DeviceState(r)},
                      {"result", trace::ResultName(r.result)},
                      {"in_group", (r.flags & trace::kFlagInGroup) != 0},
                      {"in_place", (r.flags & trace::kFlagInPlace) != 0},
                      {"engine", (r.flags & trace::kFlagAccelerated) != 0 ? "ncclscope" : "nccl"},
                      {"by_watchdog", (r.flags & trace::kFlagByWatchdog) != 0},
                      {"tid", r.tid}};
  if (!trace::IsPending(r.t_device_done_ns) && r.t_device_done_ns != trace::kDoneUntracked) {
    j["t_device_done_ns"] = r.t_device_done_ns;
  }
  AddProbeFieldsJson(r, &j);
  return j;
}

trace::NvtxNames NvtxNamesOf(const trace::RingSnapshot& file) {
  trace::NvtxNames nvtx;
  for (const auto& r : file.records) nvtx.Add(r.data);
  return nvtx;
}

namespace {

std::string NameRecordText(const trace::RecordData& r) {
  char name[trace::kNvtxNameBytes + 1] = {};
  std::memcpy(name, reinterpret_cast<const char*>(&r.group_id), trace::kNvtxNameBytes);
  return name;
}

}  // namespace

void AppendNvtxText(const trace::NvtxNames& nvtx, const trace::StoredRecord& rec,
                    std::string* line) {
  const trace::RecordData& r = rec.data;
  if (trace::NvtxNames::IsNameRecord(r)) {
    *line += fmt::format(" context={} name=\"{}\"", r.seq, NameRecordText(r));
    return;
  }
  const trace::NvtxWhere w = nvtx.Of(r.reserved);
  if (w.has_step) *line += fmt::format(" step={}", w.step);
  if (!w.phase.empty()) *line += fmt::format(" phase=\"{}\"", w.phase);
  if (!w.range.empty()) *line += fmt::format(" range=\"{}\"", w.range);
}

void AppendNvtxJson(const trace::NvtxNames& nvtx, const trace::StoredRecord& rec,
                    nlohmann::json* out) {
  const trace::RecordData& r = rec.data;
  if (trace::NvtxNames::IsNameRecord(r)) {
    (*out)["context"] = r.seq;
    (*out)["name"] = NameRecordText(r);
    return;
  }
  const trace::NvtxWhere w = nvtx.Of(r.reserved);
  if (w.has_step) (*out)["step"] = w.step;
  if (!w.phase.empty()) (*out)["phase"] = w.phase;
  if (!w.range.empty()) (*out)["range"] = w.range;
}

}  // namespace ncclscope::tools
