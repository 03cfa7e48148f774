#include "tests/hang_detector/job_builder.h"

#include <algorithm>

#include "trace/identity.h"
#include "trace/ring_layout.h"

namespace ncclscope::testing {
namespace {

constexpr int64_t kStartMonotonic = 1000LL * 1000000000LL;
constexpr int64_t kStartRealtime = 1700000000LL * 1000000000LL;

int64_t Mono(double t) {
  return kStartMonotonic + static_cast<int64_t>(t * 1e9);
}

}  // namespace

JobBuilder::JobBuilder(int world_size) : world_size_(world_size), removed_(world_size, false) {
  for (int r = 0; r < world_size; ++r) {
    trace::RingSnapshot s;
    s.path = "rank" + std::to_string(r) + ".ring";
    s.pid = Pid(r);
    s.global_rank = r;
    s.world_size = world_size;
    s.host = kHost;
    s.start_realtime_ns = kStartRealtime;
    s.start_monotonic_ns = kStartMonotonic;
    s.heartbeat_monotonic_ns = -1;  // set at Build from the last record unless given
    s.record_capacity = 1 << 16;
    files_.push_back(std::move(s));
  }
}

int64_t JobBuilder::Wall(double t) {
  return kStartRealtime + static_cast<int64_t>(t * 1e9);
}

uint64_t JobBuilder::Comm(const std::string& name, const std::vector<int>& ranks, uint64_t parent,
                          uint32_t split_index) {
  const uint64_t id = parent != 0 ? trace::CommIdFromSplit(parent, split_index, ranks.front())
                                  : trace::CommIdFromUniqueId(name.data(), name.size());
  comms_[id] = {name, ranks, parent, split_index};
  for (size_t i = 0; i < ranks.size(); ++i) {
    trace::CommInfo c;
    c.id = id;
    c.parent_id = parent;
    c.origin = parent != 0 ? trace::kCommFromSplit : trace::kCommFromUniqueId;
    c.rank = static_cast<int>(i);
    c.nranks = static_cast<int>(ranks.size());
    c.split_index = split_index;
    c.name = name;
    files_[ranks[i]].comms.push_back(c);
  }
  return id;
}

int JobBuilder::CommRank(uint64_t comm, int rank) const {
  const auto& ranks = comms_.at(comm).ranks;
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

trace::RecordData& JobBuilder::Append(int rank, trace::RecordData r, double t, Done done) {
  auto& records = files_[rank].records;
  const uint64_t index = records.empty() ? 0 : records.back().index + 1;
  r.t_enter_ns = Mono(t);
  r.t_exit_ns = Mono(t) + 1000;
  r.t_device_done_ns = done == Done::kCompleted ? Mono(t) + 1000000
                       : done == Done::kPending ? trace::PendingMarker(index)
                                                : trace::kDoneUntracked;
  if (done == Done::kCompleted) r.flags |= trace::kFlagCompletionTracked;
  r.stream = 0x1000 + r.comm_id % 97;  // one stream per communicator, as the emulator does
  records.push_back({index, r});
  return records.back().data;
}

trace::RecordData& JobBuilder::Coll(int rank, uint64_t comm, trace::OpType op, double t, Done done,
                                    uint64_t count, int32_t dtype, int32_t root) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = ++coll_seq_[{rank, comm}];
  r.op = static_cast<uint32_t>(op);
  r.count = count;
  r.dtype = dtype;
  r.redop = op == trace::OpType::kAllReduce || op == trace::OpType::kReduce ||
                    op == trace::OpType::kReduceScatter
                ? kSum
                : -1;
  r.peer = root;
  return Append(rank, r, t, done);
}

trace::RecordData& JobBuilder::Send(int rank, uint64_t comm, int peer, double t, Done done) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = ++p2p_seq_[{rank, comm, peer, true}];
  r.op = static_cast<uint32_t>(trace::OpType::kSend);
  r.count = 128;
  r.dtype = kFloat32;
  r.redop = -1;
  r.peer = peer;
  return Append(rank, r, t, done);
}

trace::RecordData& JobBuilder::Recv(int rank, uint64_t comm, int peer, double t, Done done) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = ++p2p_seq_[{rank, comm, peer, false}];
  r.op = static_cast<uint32_t>(trace::OpType::kRecv);
  r.count = 128;
  r.dtype = kFloat32;
  r.redop = -1;
  r.peer = peer;
  return Append(rank, r, t, done);
}

void JobBuilder::InitInCall(int rank, uint64_t child, int nranks, int comm_rank, double t) {
  trace::RecordData r{};
  r.comm_id = child;
  r.op = static_cast<uint32_t>(trace::OpType::kCommInitRank);
  r.aux = static_cast<uint64_t>(comm_rank) << 32 | static_cast<uint32_t>(nranks);
  r.result = trace::kResultInCall;
  r.dtype = r.redop = r.peer = -1;
  Append(rank, r, t, Done::kUntracked).t_exit_ns = 0;
}

void JobBuilder::SplitInCall(int rank, uint64_t parent, uint32_t split_index, int color, double t) {
  trace::RecordData r{};
  r.comm_id = parent;
  r.seq = split_index;
  r.op = static_cast<uint32_t>(trace::OpType::kCommSplit);
  r.aux = static_cast<uint64_t>(static_cast<uint32_t>(color)) << 32;
  r.result = trace::kResultInCall;
  r.dtype = r.redop = r.peer = -1;
  Append(rank, r, t, Done::kUntracked).t_exit_ns = 0;
}

void JobBuilder::ProfilerAttach(int rank, uint64_t comm, double t) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.op = static_cast<uint32_t>(trace::OpType::kProfilerAttach);
  r.count = 5;
  r.dtype = r.redop = -1;
  r.peer = CommRank(comm, rank);
  Append(rank, r, t, Done::kUntracked);
}

void JobBuilder::DeviceStart(int rank, uint64_t comm, uint64_t seq, double t) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = seq;
  r.op = static_cast<uint32_t>(trace::OpType::kDeviceStart);
  r.dtype = r.redop = -1;
  r.peer = 0;  // channel
  Append(rank, r, t, Done::kUntracked);
}

trace::RecordData& JobBuilder::ProbeRecord(int rank, uint64_t comm, trace::OpType op, double t) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.op = static_cast<uint32_t>(op);
  return Append(rank, r, t, Done::kUntracked);
}

void JobBuilder::ProxyProgress(int rank, uint64_t comm, uint64_t seq, int peer, int channel,
                               bool send, int state, double t, trace::OpType op) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = seq;
  r.op = static_cast<uint32_t>(trace::OpType::kProxyProgress);
  r.peer = peer;
  r.dtype = channel;
  r.redop = state;
  r.count = uint64_t{1} << 32;  // one step posted, none done
  // Set after Append, which gives every record its communicator's stream.
  Append(rank, r, t, Done::kUntracked).stream =
      (send ? trace::kProxySend : 0) | uint64_t{4} << 8 | static_cast<uint64_t>(op) << 32;
}

void JobBuilder::P2pDeviceStart(int rank, uint64_t comm, uint64_t seq, int peer, bool send,
                                double t) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = seq;
  r.op = static_cast<uint32_t>(trace::OpType::kP2pDeviceStart);
  r.peer = peer;
  r.redop = static_cast<int32_t>(send ? trace::OpType::kSend : trace::OpType::kRecv);
  r.dtype = 0;  // channel
  Append(rank, r, t, Done::kUntracked);
}

void JobBuilder::Heartbeat(int rank, double t) {
  files_[rank].heartbeat_monotonic_ns = Mono(t);
}

void JobBuilder::HeartbeatAll(double t) {
  for (int r = 0; r < world_size_; ++r) Heartbeat(r, t);
}

void JobBuilder::Finished(int rank) {
  files_[rank].flags |= trace::kHeaderFinished;
}

void JobBuilder::WatchdogAbort(int rank, uint64_t comm, double t) {
  files_[rank].flags |= trace::kHeaderWatchdogAborted;
  for (trace::StoredRecord& s : files_[rank].records) {
    if (s.data.comm_id == comm && trace::IsPending(s.data.t_device_done_ns)) {
      s.data.t_device_done_ns = Mono(t) + 5'000'000;
    }
  }
  ProbeRecord(rank, comm, trace::OpType::kCommAbort, t).flags = trace::kFlagByWatchdog;
}

void JobBuilder::RemoveFile(int rank) {
  removed_[rank] = true;
}

void JobBuilder::AddPresence(int rank, int pid, double t, int world_size) {
  trace::RingSnapshot s;
  s.path = std::string(kHost) + "-" + std::to_string(pid) + "-presence.ring";
  s.pid = pid;
  s.global_rank = rank;
  s.world_size = world_size < 0 ? world_size_ : world_size;
  s.host = kHost;
  s.flags = trace::kHeaderPresence;
  // Its clocks are read when it starts, and its heartbeat never moves from there.
  s.start_realtime_ns = Wall(t);
  s.start_monotonic_ns = Mono(t);
  s.heartbeat_monotonic_ns = Mono(t);
  s.record_capacity = 1;
  presences_.push_back(std::move(s));
}

void JobBuilder::PresenceFinished(int pid) {
  for (trace::RingSnapshot& s : presences_) {
    if (s.pid == pid) s.flags |= trace::kHeaderFinished;
  }
}

void JobBuilder::PresenceHost(int pid, const std::string& host) {
  for (trace::RingSnapshot& s : presences_) {
    if (s.pid == pid) s.host = host;
  }
}

void JobBuilder::Host(int rank, const std::string& host) {
  files_[rank].host = host;
}

void JobBuilder::Wrap(int rank, size_t keep_last) {
  auto& s = files_[rank];
  const size_t lost = s.records.size() - std::min(keep_last, s.records.size());
  s.records.erase(s.records.begin(), s.records.begin() + static_cast<std::ptrdiff_t>(lost));
  s.overwritten = lost;
}

void JobBuilder::Torn(int rank) {
  files_[rank].torn_records = 1;
}

trace::TraceSet JobBuilder::Build() const {
  trace::TraceSet set;
  for (int r = 0; r < world_size_; ++r) {
    if (removed_[r]) continue;
    trace::RingSnapshot s = files_[r];
    if (s.heartbeat_monotonic_ns < 0 && s.records.empty()) {
      s.heartbeat_monotonic_ns = kStartMonotonic;
    } else if (s.heartbeat_monotonic_ns < 0) {
      const auto& last = s.records.back().data;
      s.heartbeat_monotonic_ns = std::max(last.t_enter_ns, last.t_exit_ns);
    }
    s.write_pos = s.records.empty() ? 0 : s.records.back().index + 1;
    set.files.push_back(std::move(s));
  }
  set.files.insert(set.files.end(), presences_.begin(), presences_.end());
  return set;
}

std::vector<hang_detector::RankFile> CompactFiles(const trace::TraceSet& set) {
  std::vector<hang_detector::RankFile> files(set.files.size());
  for (size_t i = 0; i < set.files.size(); ++i) {
    hang_detector::RankFileBuilder builder(&files[i]);
    builder.BeginFile(set.files[i]);
    builder.Records(set.files[i].records.data(), set.files[i].records.size());
    builder.EndFile(set.files[i]);
  }
  return files;
}

}  // namespace ncclscope::testing
