// Encoding side of the digest codec (exporters/multinode/digest_codec.h).
#include <set>
#include <string>
#include <vector>

#include "exporters/multinode/digest.pb.h"
#include "exporters/multinode/digest_codec.h"
#include "exporters/multinode/digest_codes.h"
#include "trace/numerics_record.h"

namespace ncclscope::exporters {
namespace {

namespace pb = ncclscope::digest;
namespace dc = digest_codes;
using hang_detector::ProcessState;
using hang_detector::RankFile;

pb::ProcessState ToProto(ProcessState s) {
  switch (s) {
    case ProcessState::kRunning:
      return pb::PROCESS_RUNNING;
    case ProcessState::kStopped:
      return pb::PROCESS_STOPPED;
    case ProcessState::kGone:
      return pb::PROCESS_GONE;
    case ProcessState::kUnknown:
      break;
  }
  return pb::PROCESS_UNKNOWN;
}

void EncodeInfo(const trace::RingInfo& s, pb::RankDigest* r) {
  r->set_path(s.path);
  r->set_ring_format_version(s.format_version);
  r->set_pid(s.pid);
  r->set_global_rank(s.global_rank);
  r->set_local_rank(s.local_rank);
  r->set_world_size(s.world_size);
  r->set_host(s.host);
  r->set_job_id(s.job_id);
  r->set_gpu_uuid(s.gpu_uuid);
  r->set_start_realtime_ns(s.start_realtime_ns);
  r->set_start_monotonic_ns(s.start_monotonic_ns);
  r->set_heartbeat_monotonic_ns(s.heartbeat_monotonic_ns);
  r->set_nccl_version(s.nccl_version);
  r->set_flags(s.flags);
  r->set_record_capacity(s.record_capacity);
  r->set_write_pos(s.write_pos);
  r->set_overwritten(s.overwritten);
  r->set_dropped_records(s.dropped_records);
  r->set_dropped_comms(s.dropped_comms);
  r->set_untracked_completions(s.untracked_completions);
  r->set_unknown_comm_records(s.unknown_comm_records);
  r->set_torn_records(s.torn_records);
  for (const trace::CommInfo& c : s.comms) {
    pb::CommEntry* e = r->add_comms();
    e->set_id(c.id);
    e->set_parent_id(c.parent_id);
    e->set_origin(c.origin);
    e->set_rank(c.rank);
    e->set_nranks(c.nranks);
    e->set_color(c.color);
    e->set_key(c.key);
    e->set_split_index(c.split_index);
    e->set_cuda_device(c.cuda_device);
    e->set_created_monotonic_ns(c.created_monotonic_ns);
    e->set_handle(c.handle);
    e->set_name(c.name);
    e->set_pending(c.pending);
  }
}

void EncodeShapes(const RankFile& f, pb::RankDigest* r) {
  for (const hang_detector::OpShape& s : f.shapes) {
    pb::Shape* p = r->add_shapes();
    p->set_comm_id(s.comm_id);
    p->set_count(s.count);
    p->set_aux(s.aux);
    p->set_stream(s.stream);
    p->set_op(s.op);
    p->set_dtype(s.dtype);
    p->set_redop(s.redop);
    p->set_peer(s.peer);
    p->set_result(s.result);
  }
}

// A code, or kKindRaw with the value appended to the raw column.
uint64_t CodeOrRaw(int64_t value, int64_t base, pb::Records* out) {
  const uint64_t code = dc::Code(value, base);
  if (code == dc::kKindRaw) out->add_raw(value);
  return code;
}

void EncodeRecords(const RankFile& f, pb::Records* out) {
  const int n = static_cast<int>(f.size());
  out->mutable_shape()->Reserve(n);
  out->mutable_flags()->Reserve(n);
  out->mutable_enter_delta()->Reserve(n);
  out->mutable_exit_code()->Reserve(n);
  out->mutable_done_code()->Reserve(n);
  out->mutable_seq_delta()->Reserve(n);
  out->mutable_group_code()->Reserve(n);
  int64_t prev_enter = f.snap->start_monotonic_ns;
  int64_t prev_group = 0;
  std::vector<uint64_t> last_seq(f.shapes.size(), 0);  // per shape: its collectives' seqs step by 1
  for (uint32_t pos = 0; pos < f.size(); ++pos) {
    const hang_detector::OpRecord& r = f.ops[pos];
    out->add_shape(r.shape);
    out->add_flags(r.flags);
    out->add_enter_delta(static_cast<int64_t>(dc::Relative(r.t_enter_ns, prev_enter)));
    prev_enter = r.t_enter_ns;
    out->add_exit_code(CodeOrRaw(r.t_exit_ns, r.t_enter_ns, out));
    if (r.t_device_done_ns == trace::kDoneUntracked) {
      out->add_done_code(dc::SpecialCode(dc::kSpecialUntracked));
    } else if (r.t_device_done_ns < 0 && f.IndexOf(pos) < (uint64_t{1} << 62) &&
               r.t_device_done_ns == trace::PendingMarker(f.IndexOf(pos))) {
      out->add_done_code(dc::SpecialCode(dc::kSpecialPending));
    } else {
      out->add_done_code(CodeOrRaw(r.t_device_done_ns, r.t_enter_ns, out));
    }
    out->add_seq_delta(static_cast<int64_t>(r.seq - last_seq[r.shape]));
    last_seq[r.shape] = r.seq;
    const auto group = static_cast<int64_t>(r.group_id);
    out->add_group_code(CodeOrRaw(group, prev_group, out));
    if (group != 0) prev_group = group;
  }
}

// The NVTX context runs of the records kept, and the names of the context ids they use only.
void EncodeNvtx(const RankFile& f, pb::RankDigest* r) {
  std::set<uint32_t> ids;
  for (const auto& [pos, word] : f.nvtx_runs) {
    r->add_nvtx_run_pos(pos);
    r->add_nvtx_run_word(word);
    ids.insert(trace::NvtxContextId(word));
  }
  for (uint32_t id : ids) {
    std::string phase, range;
    if (id == 0 || id >= trace::kNvtxContextFull || !f.nvtx_names.NamesOf(id, &phase, &range)) {
      continue;
    }
    pb::NvtxContext* c = r->add_nvtx_contexts();
    c->set_id(id);
    c->set_phase(phase);
    c->set_range(range);
  }
}

// The device_compute entries of the records kept.
void EncodeDeviceCompute(const RankFile& f, pb::RankDigest* r) {
  for (const hang_detector::DeviceCompute& d : f.device_compute) {
    pb::DeviceCompute* e = r->add_device_compute();
    e->set_pos(d.pos);
    e->set_compute_ns(d.compute_ns);
    e->set_gpu_start(d.gpu_start);
  }
}

// The numerics entries of the records kept: the record's own fields a shape does not hold.
void EncodeNumerics(const RankFile& f, pb::RankDigest* r) {
  for (const hang_detector::NumericsEntry& n : f.numerics) {
    const trace::RecordData d = trace::EncodeNumerics(n.sample);
    pb::Numerics* e = r->add_numerics();
    e->set_pos(n.pos);
    e->set_nan_count(d.count);
    e->set_inf_count(d.aux);
    e->set_first_nonfinite(d.send_buffer);
    e->set_hash(d.recv_buffer);
  }
}

}  // namespace

std::string EncodeNodeDigest(const DigestHeader& header, const std::vector<DigestRank>& ranks) {
  pb::NodeDigest d;
  d.set_format_version(kDigestFormatVersion);
  d.set_job_id(header.job_id);
  d.set_host(header.host);
  d.set_produced_at_ns(header.produced_at_ns);
  d.set_built_at_ns(header.built_at_ns);
  for (const std::string& line : header.unreadable) d.add_unreadable(line);
  d.set_instance(header.instance);
  for (const DigestRank& rank : ranks) {
    const RankFile& f = *rank.file;
    pb::RankDigest* r = d.add_ranks();
    EncodeInfo(*f.snap, r);
    r->set_process(ToProto(rank.process));
    EncodeShapes(f, r);
    EncodeRecords(f, r->mutable_records());
    for (const auto& [pos, index] : f.index_runs) {
      r->add_run_pos(pos);
      r->add_run_index(index);
    }
    r->set_omitted_records(rank.omitted);
    r->set_pause_before_ns(f.pause_before_ns);
    EncodeNvtx(f, r);
    EncodeDeviceCompute(f, r);
    EncodeNumerics(f, r);
  }
  return d.SerializeAsString();
}

void StampProducedAt(std::string* bytes, int64_t produced_at_ns) {
  // Field 4, wire type 0 (varint); an int64 is written as its 64-bit two's complement.
  constexpr uint8_t kTag = pb::NodeDigest::kProducedAtNsFieldNumber << 3;
  bytes->push_back(static_cast<char>(kTag));
  auto v = static_cast<uint64_t>(produced_at_ns);
  while (v >= 0x80) {
    bytes->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  bytes->push_back(static_cast<char>(v));
}

}  // namespace ncclscope::exporters
