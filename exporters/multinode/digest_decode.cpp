// Decoding side of the digest codec (exporters/multinode/digest_codec.h): every count and index of
// the bytes is checked before it is used, so a corrupt or hostile digest is an error naming its
// source.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "exporters/multinode/digest.pb.h"
#include "exporters/multinode/digest_codec.h"
#include "exporters/multinode/digest_codes.h"
#include "hang_detector/ingest/rank_digest.h"
#include "trace/numerics_record.h"

namespace ncclscope::exporters {
namespace {

namespace pb = ncclscope::digest;
namespace dc = digest_codes;
using hang_detector::RankFile;

hang_detector::ProcessState FromProto(int s) {
  switch (s) {
    case pb::PROCESS_RUNNING:
      return hang_detector::ProcessState::kRunning;
    case pb::PROCESS_STOPPED:
      return hang_detector::ProcessState::kStopped;
    case pb::PROCESS_GONE:
      return hang_detector::ProcessState::kGone;
    default:
      return hang_detector::ProcessState::kUnknown;  // what a newer producer may add
  }
}

constexpr uint64_t kMaxWriterIndex = uint64_t{1} << 62;

struct Decoder {
  explicit Decoder(const DigestBounds& b) : bounds(b) {}
  const DigestBounds& bounds;
  int64_t shift = 0;          // received_at - produced_at
  uint64_t lane_entries = 0;  // summed over the digest's ranks
  std::string why;

  bool Fail(std::string what) {
    why = std::move(what);
    return false;
  }
  bool StringOk(const std::string& s, const char* what) {
    return s.size() <= bounds.max_string ||
           Fail(std::string(what) + " of " + std::to_string(s.size()) + " bytes");
  }

  bool Info(const pb::RankDigest& r, trace::RingInfo* s) {
    if (!StringOk(r.path(), "path") || !StringOk(r.host(), "host") ||
        !StringOk(r.job_id(), "job id") || !StringOk(r.gpu_uuid(), "GPU UUID")) {
      return false;
    }
    if (static_cast<size_t>(r.comms_size()) > bounds.max_comms_per_rank) {
      return Fail(std::to_string(r.comms_size()) + " communicators, more than " +
                  std::to_string(bounds.max_comms_per_rank));
    }
    s->path = r.host() + ":" + r.path();
    s->format_version = r.ring_format_version();
    s->pid = r.pid();
    s->global_rank = r.global_rank();
    s->local_rank = r.local_rank();
    s->world_size = r.world_size();
    s->host = r.host();
    s->job_id = r.job_id();
    s->gpu_uuid = r.gpu_uuid();
    if (__builtin_add_overflow(r.start_realtime_ns(), shift, &s->start_realtime_ns)) {
      return Fail("start time out of range");
    }
    s->start_monotonic_ns = r.start_monotonic_ns();
    s->heartbeat_monotonic_ns = r.heartbeat_monotonic_ns();
    s->nccl_version = r.nccl_version();
    s->flags = r.flags();
    s->record_capacity = r.record_capacity();
    s->write_pos = r.write_pos();
    s->overwritten = r.overwritten();
    s->dropped_records = r.dropped_records();
    s->dropped_comms = r.dropped_comms();
    s->untracked_completions = r.untracked_completions();
    s->unknown_comm_records = r.unknown_comm_records();
    s->torn_records = r.torn_records();
    s->comms.reserve(r.comms_size());
    for (const pb::CommEntry& e : r.comms()) {
      if (!StringOk(e.name(), "communicator name")) return false;
      trace::CommInfo c;
      c.id = e.id();
      c.parent_id = e.parent_id();
      c.origin = e.origin();
      c.rank = e.rank();
      c.nranks = e.nranks();
      c.color = e.color();
      c.key = e.key();
      c.split_index = e.split_index();
      c.cuda_device = e.cuda_device();
      c.created_monotonic_ns = e.created_monotonic_ns();
      c.handle = e.handle();
      c.name = e.name();
      c.pending = e.pending();
      s->comms.push_back(std::move(c));
    }
    return true;
  }

  bool Shapes(const pb::RankDigest& r, RankFile* f) {
    if (static_cast<size_t>(r.shapes_size()) > bounds.max_shapes_per_rank) {
      return Fail(std::to_string(r.shapes_size()) + " shapes, more than " +
                  std::to_string(bounds.max_shapes_per_rank));
    }
    f->shapes.reserve(r.shapes_size());
    for (const pb::Shape& p : r.shapes()) {
      hang_detector::OpShape s;
      s.comm_id = p.comm_id();
      s.count = p.count();
      s.aux = p.aux();
      s.stream = p.stream();
      s.op = p.op();
      s.dtype = p.dtype();
      s.redop = p.redop();
      s.peer = p.peer();
      s.result = p.result();
      f->shapes.push_back(s);
    }
    return true;
  }

  // Runs start at position 0, positions and writer indices only grow, and the indices span no more
  // than the largest ring holds.
  bool Runs(const pb::RankDigest& r, size_t n, RankFile* f) {
    if (r.run_pos_size() != r.run_index_size()) return Fail("index runs of unequal columns");
    if ((n == 0) != (r.run_pos_size() == 0)) return Fail("index runs do not match the records");
    if (n == 0) return true;
    if (r.run_pos(0) != 0) return Fail("the first index run does not start at record 0");
    uint64_t end = 0;  // one past the writer index of the previous run's last record
    for (int i = 0; i < r.run_pos_size(); ++i) {
      const uint32_t pos = r.run_pos(i);
      const uint64_t index = r.run_index(i);
      if (pos >= n || (i > 0 && pos <= r.run_pos(i - 1))) return Fail("index runs out of order");
      if (i > 0) {
        const uint64_t prev_end = r.run_index(i - 1) + (pos - r.run_pos(i - 1));
        if (prev_end < r.run_index(i - 1) || index < prev_end) {
          return Fail("writer indices of the records go backwards");
        }
      }
      const uint32_t next_pos = i + 1 < r.run_pos_size() ? r.run_pos(i + 1) : n;
      // Writers count records from 0; the bound keeps pending markers (-(index + 1)) in range.
      if (index >= kMaxWriterIndex) return Fail("writer index out of range");
      end = index + (next_pos > pos ? next_pos - pos : 0);
      f->index_runs.emplace_back(pos, index);
    }
    if (end >= kMaxWriterIndex || end - r.run_index(0) > bounds.max_index_span) {
      return Fail("records span " + std::to_string(end - r.run_index(0)) +
                  " writer indices, more than a ring holds");
    }
    return true;
  }

  bool Records(const pb::RankDigest& r, RankFile* f) {
    const pb::Records& c = r.records();
    const int n = c.shape_size();
    if (c.flags_size() != n || c.enter_delta_size() != n || c.exit_code_size() != n ||
        c.done_code_size() != n || c.seq_delta_size() != n || c.group_code_size() != n) {
      return Fail("record columns of unequal length");
    }
    if (static_cast<size_t>(n) > bounds.max_records_per_rank) {
      return Fail(std::to_string(n) + " records, more than " +
                  std::to_string(bounds.max_records_per_rank));
    }
    if (!Runs(r, static_cast<size_t>(n), f)) return false;
    f->ops.reserve(n);
    int raw = 0;
    // `pending`: the pending marker of this record for the one column with special values.
    auto value = [&](uint64_t code, int64_t base, const int64_t* pending, int64_t* out) {
      switch (code & 3) {
        case dc::kKindZero:
          *out = 0;
          return code == 0;
        case dc::kKindRelative:
          *out = dc::FromRelative(code >> 2, base);
          return true;
        case dc::kKindSpecial:
          if (pending == nullptr) return false;  // this column has no special values
          if ((code >> 2) == dc::kSpecialUntracked) {
            *out = trace::kDoneUntracked;
            return true;
          }
          *out = *pending;
          return (code >> 2) == dc::kSpecialPending;
        default:
          if (code != dc::kKindRaw || raw >= c.raw_size()) return false;
          *out = c.raw(raw++);
          return true;
      }
    };
    int64_t enter = r.start_monotonic_ns();
    int64_t group = 0;
    std::vector<uint64_t> last_seq(f->shapes.size(), 0);
    size_t run = 0;
    for (int i = 0; i < n; ++i) {
      hang_detector::OpRecord o{};
      o.shape = c.shape(i);
      if (o.shape >= f->shapes.size()) return Fail("record " + std::to_string(i) + ": no shape");
      o.flags = c.flags(i);
      enter = dc::FromRelative(static_cast<uint64_t>(c.enter_delta(i)), enter);
      o.t_enter_ns = enter;
      while (run + 1 < f->index_runs.size() && f->index_runs[run + 1].first <= uint32_t(i)) ++run;
      const uint64_t index = f->index_runs[run].second + (i - f->index_runs[run].first);
      const int64_t pending = trace::PendingMarker(index);
      int64_t g = 0;
      if (!value(c.exit_code(i), enter, nullptr, &o.t_exit_ns) ||
          !value(c.done_code(i), enter, &pending, &o.t_device_done_ns) ||
          !value(c.group_code(i), group, nullptr, &g)) {
        return Fail("record " + std::to_string(i) + ": invalid time or group code");
      }
      o.group_id = static_cast<uint64_t>(g);
      if (g != 0) group = g;
      o.seq = last_seq[o.shape] + static_cast<uint64_t>(c.seq_delta(i));
      last_seq[o.shape] = o.seq;
      f->ops.push_back(o);
    }
    if (raw != c.raw_size()) return Fail("raw values left over");
    return true;
  }

  // What the index's lanes will hold for this rank: per communicator (collectives) and per
  // send/recv pair, the span of sequence numbers, at most what the writer indices allow.
  bool LaneBudget(const RankFile& f) {
    if (f.ops.empty()) return true;
    struct Span {
      uint64_t lo = UINT64_MAX, hi = 0;
    };
    // Exact keys, not hashes: colliding keys would merge two lanes and undercount.
    std::map<std::tuple<uint64_t, uint32_t, int32_t>, Span> spans;  // (comm, op, peer)
    for (const hang_detector::OpRecord& r : f.ops) {
      const hang_detector::OpShape& s = f.shapes[r.shape];
      const auto op = static_cast<trace::OpType>(s.op);
      if (r.seq == 0 || s.comm_id == 0) continue;
      std::tuple<uint64_t, uint32_t, int32_t> key{s.comm_id, 0, 0};  // a collective lane
      if (trace::IsP2P(op)) {
        key = {s.comm_id, s.op, s.peer};
      } else if (!trace::IsCollective(op)) {
        continue;
      }
      Span& sp = spans[key];
      sp.lo = std::min(sp.lo, r.seq);
      sp.hi = std::max(sp.hi, r.seq);
    }
    const uint64_t index_span =
        f.IndexOf(f.size() - 1) - f.index_runs.front().second + 1 + 64;  // Place's reorder slack
    for (const auto& [key, sp] : spans) {
      lane_entries += std::min(sp.hi - sp.lo + 1, index_span);
      if (lane_entries > bounds.max_lane_entries) {
        return Fail("sequence numbers would need " + std::to_string(lane_entries) +
                    "+ lane entries, more than " + std::to_string(bounds.max_lane_entries));
      }
    }
    return true;
  }

  // NVTX context runs: positions grow and lie among the records; names only for ids 1..254, each
  // once and no longer than a name record holds.
  bool Nvtx(const pb::RankDigest& r, RankFile* f) {
    const size_t n = f->ops.size();
    if (r.nvtx_run_pos_size() != r.nvtx_run_word_size()) {
      return Fail("NVTX context runs of unequal columns");
    }
    for (int i = 0; i < r.nvtx_run_pos_size(); ++i) {
      const uint32_t pos = r.nvtx_run_pos(i);
      if (pos >= n || (i > 0 && pos <= r.nvtx_run_pos(i - 1))) {
        return Fail("NVTX context runs out of order or past the records");
      }
      f->nvtx_runs.emplace_back(pos, r.nvtx_run_word(i));
    }
    if (r.nvtx_contexts_size() >= static_cast<int>(trace::kNvtxContextFull)) {
      return Fail(std::to_string(r.nvtx_contexts_size()) + " NVTX contexts, more than 254");
    }
    std::set<uint32_t> seen;
    for (const pb::NvtxContext& c : r.nvtx_contexts()) {
      if (c.id() == 0 || c.id() >= trace::kNvtxContextFull || !seen.insert(c.id()).second) {
        return Fail("NVTX context id " + std::to_string(c.id()) + " out of 1..254 or repeated");
      }
      if (c.phase().size() >= trace::kNvtxNameBytes || c.range().size() >= trace::kNvtxNameBytes) {
        return Fail("NVTX context " + std::to_string(c.id()) + ": a name longer than " +
                    std::to_string(trace::kNvtxNameBytes - 1) + " bytes");
      }
      // As the ring's name records hold them, so one reader learns names from both.
      for (const auto& [op, name] : {std::pair{trace::OpType::kNvtxPhaseName, &c.phase()},
                                     std::pair{trace::OpType::kNvtxRangeName, &c.range()}}) {
        trace::RecordData rec{};
        rec.op = static_cast<uint32_t>(op);
        rec.seq = c.id();
        std::memcpy(reinterpret_cast<char*>(&rec.group_id), name->data(), name->size());
        f->nvtx_names.Add(rec);
      }
    }
    return true;
  }

  // device_compute entries: one per device_compute record, positions growing; a compute time is
  // -1 (unknown) or a plausible duration.
  bool DeviceComputes(const pb::RankDigest& r, RankFile* f) {
    const size_t n = f->ops.size();
    for (int i = 0; i < r.device_compute_size(); ++i) {
      const pb::DeviceCompute& e = r.device_compute(i);
      if (e.pos() >= n || (i > 0 && e.pos() <= r.device_compute(i - 1).pos()) ||
          f->ShapeAt(e.pos()).op != static_cast<uint32_t>(trace::OpType::kDeviceCompute)) {
        return Fail("device_compute entry " + std::to_string(i) +
                    " out of order or not at a device_compute record");
      }
      if (e.compute_ns() < -1 || e.compute_ns() > bounds.max_pause_ns) {
        return Fail("device_compute entry " + std::to_string(i) + ": compute time of " +
                    std::to_string(e.compute_ns()) + " ns");
      }
      // The rest is the record's, as RankFileBuilder takes it from the ring.
      const hang_detector::OpShape& shape = f->ShapeAt(e.pos());
      const hang_detector::OpRecord& rec = f->ops[e.pos()];
      f->device_compute.push_back(
          {e.pos(), shape.comm_id, rec.seq, rec.group_id, static_cast<uint32_t>(shape.redop),
           static_cast<uint32_t>(shape.peer), e.compute_ns(), e.gpu_start()});
    }
    return true;
  }

  // numerics entries: one per numerics record, positions growing. The counts and the hash are
  // whatever the producer's probe found; the rest is the record's (its shape and columns).
  bool Numerics(const pb::RankDigest& r, RankFile* f) {
    const size_t n = f->ops.size();
    for (int i = 0; i < r.numerics_size(); ++i) {
      const pb::Numerics& e = r.numerics(i);
      if (e.pos() >= n || (i > 0 && e.pos() <= r.numerics(i - 1).pos()) ||
          f->ShapeAt(e.pos()).op != static_cast<uint32_t>(trace::OpType::kNumerics)) {
        return Fail("numerics entry " + std::to_string(i) +
                    " out of order or not at a numerics record");
      }
      trace::RecordData d = f->At(e.pos());
      d.count = e.nan_count();
      d.aux = e.inf_count();
      d.send_buffer = e.first_nonfinite();
      d.recv_buffer = e.hash();
      f->numerics.push_back({e.pos(), trace::DecodeNumerics(d)});
    }
    return true;
  }

  bool Rank(const pb::RankDigest& r, const std::string& source, RankFile* f) {
    auto info = std::make_shared<trace::RingInfo>();
    if (!Info(r, info.get()) || !Shapes(r, f) || !Records(r, f) || !LaneBudget(*f) || !Nvtx(r, f) ||
        !DeviceComputes(r, f) || !Numerics(r, f)) {
      return false;
    }
    if (r.pause_before_ns() < 0 || r.pause_before_ns() > bounds.max_pause_ns) {
      return Fail("longest pause of " + std::to_string(r.pause_before_ns()) +
                  " ns, not between 0 and " + std::to_string(bounds.max_pause_ns));
    }
    f->pause_before_ns = r.pause_before_ns();
    f->rank = info->global_rank;
    if (__builtin_sub_overflow(info->start_realtime_ns, info->start_monotonic_ns,
                               &f->wall_offset) ||
        __builtin_add_overflow(info->heartbeat_monotonic_ns, f->wall_offset, &f->heartbeat_wall)) {
      return Fail("clock values out of range");
    }
    f->snap = std::move(info);
    hang_detector::DeriveFrontier(f);
    f->remote = hang_detector::RemoteObservation{FromProto(r.process()), source};
    return true;
  }
};

}  // namespace

bool DecodeNodeDigest(std::string_view bytes, const std::string& source, int64_t received_at_ns,
                      DecodedDigest* out, std::string* error, const DigestBounds& bounds) {
  auto fail = [&](const std::string& what) {
    *error = source + ": " + what;
    return false;
  };
  if (bytes.empty()) return fail("empty: not a digest");
  if (bytes.size() > bounds.max_bytes) {
    return fail(std::to_string(bytes.size()) + " bytes, more than a digest may have (" +
                std::to_string(bounds.max_bytes) + ")");
  }
  pb::NodeDigest d;
  if (!d.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return fail("not a node digest (truncated, or not protobuf)");
  }
  if (d.format_version() != kDigestFormatVersion) {
    return fail("digest format version " + std::to_string(d.format_version()) +
                "; this build reads version " + std::to_string(kDigestFormatVersion));
  }
  if (d.produced_at_ns() <= 0) return fail("no production time: its times cannot be placed");
  if (static_cast<size_t>(d.ranks_size()) > bounds.max_ranks) {
    return fail(std::to_string(d.ranks_size()) + " ranks, more than " +
                std::to_string(bounds.max_ranks));
  }
  size_t records = 0;
  for (const pb::RankDigest& r : d.ranks()) records += r.records().shape_size();
  if (records > bounds.max_records) {
    return fail(std::to_string(records) + " records, more than " +
                std::to_string(bounds.max_records));
  }
  Decoder dec(bounds);
  if (__builtin_sub_overflow(received_at_ns, d.produced_at_ns(), &dec.shift)) {
    return fail("production time out of range");
  }
  if (!dec.StringOk(d.host(), "host") || !dec.StringOk(d.job_id(), "job id")) {
    return fail(dec.why);
  }
  if (static_cast<size_t>(d.unreadable_size()) > bounds.max_unreadable) {
    return fail(std::to_string(d.unreadable_size()) + " unreadable files listed, more than " +
                std::to_string(bounds.max_unreadable));
  }
  DecodedDigest result;
  result.header = {d.job_id(), d.host(), d.built_at_ns(), d.produced_at_ns(), {}, d.instance()};
  for (const std::string& line : d.unreadable()) {
    if (!dec.StringOk(line, "unreadable-file line")) return fail(dec.why);
    result.header.unreadable.push_back(line);
  }
  result.files.resize(d.ranks_size());
  for (int i = 0; i < d.ranks_size(); ++i) {
    if (!dec.Rank(d.ranks(i), source, &result.files[i])) {
      return fail("rank entry " + std::to_string(i) + ": " + dec.why);
    }
    result.omitted += d.ranks(i).omitted_records();
  }
  *out = std::move(result);
  return true;
}

}  // namespace ncclscope::exporters
