#include "hang_detector/ingest/job_index.h"

#include <algorithm>
#include <climits>
#include <iterator>

#include "hang_detector/ingest/presence_files.h"
#include "trace/identity.h"
#include "trace/job_choice.h"
#include "trace/nccl_names.h"
#include "trace/world_size.h"

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;
constexpr int32_t kNcclSuccess = 0;
constexpr int32_t kNcclInProgress = 7;

bool IsRooted(OpType op) {
  return op == OpType::kBroadcast || op == OpType::kReduce || op == OpType::kGather ||
         op == OpType::kScatter;
}
bool IsReducing(OpType op) {
  return op == OpType::kAllReduce || op == OpType::kReduce || op == OpType::kReduceScatter;
}
bool IsInit(OpType op) {
  return op == OpType::kCommInitRank || op == OpType::kCommInitRankConfig ||
         op == OpType::kCommInitRankScalable || op == OpType::kCommSplit ||
         op == OpType::kCommShrink;
}

// Sequence numbers count calls; a larger one is a corrupt record, and would overflow EndSeq().
constexpr uint64_t kMaxSeq = uint64_t{1} << 62;
// Calls of one communicator issued from several threads at once may reach the ring out of order.
constexpr uint64_t kReorderSlack = 64;

// Appends `pos` at sequence number `seq`, leaving holes for numbers never recorded (dropped).
// Sequence numbers only grow within a lane; a smaller one (a recreated communicator reusing the
// id) restarts nothing and is ignored rather than corrupting the order. Each call takes a number
// and a ring slot, so a lane never spans more numbers than its records span slots: a number beyond
// that is corrupt and refused (false) rather than allocated, which keeps every lane within the size
// of its ring file.
bool Place(CollLane& lane, const RankFile& file, uint64_t seq, uint32_t pos) {
  if (seq >= kMaxSeq) return false;
  if (lane.pos.empty()) lane.first_seq = seq;
  if (seq < lane.EndSeq()) return true;
  if (seq > lane.EndSeq() &&
      seq - lane.first_seq > file.IndexOf(pos) - file.IndexOf(lane.pos.front()) + kReorderSlack) {
    return false;
  }
  lane.pos.resize(seq - lane.first_seq, kNoRecord);
  lane.pos.push_back(pos);
  return true;
}

// Files whose header claims an implausible world size, for one note naming the first of them.
struct Implausible {
  int files = 0;
  int first_size = 0;
  std::string first_path;
};

}  // namespace

int CommModel::MemberFile(int comm_rank) const {
  for (const CommMember& m : members) {
    if (m.comm_rank == comm_rank) return static_cast<int>(m.file);
  }
  return -1;
}

JobIndex::JobIndex(const trace::TraceSet& set) {
  std::vector<const trace::RingInfo*> infos;
  infos.reserve(set.files.size());
  for (const trace::RingSnapshot& s : set.files) infos.push_back(&s);
  const trace::JobChoice choice = trace::ChooseJob(infos, set.job);
  if (choice.LeftOut() > 0) notes_.push_back(choice.Note());
  std::vector<RankFile> files;
  files.reserve(set.files.size());
  for (size_t i = 0; i < set.files.size(); ++i) {
    if (choice.keep[i] == 0) continue;
    const trace::RingSnapshot& s = set.files[i];
    RankFileBuilder builder(&files.emplace_back());
    builder.BeginFile(s);
    builder.Records(s.records.data(), s.records.size());
    builder.EndFile(s);
  }
  errors_ = set.errors;
  Build(std::move(files));
}

JobIndex JobIndex::FromFiles(std::vector<RankFile> files, std::vector<std::string> errors,
                             std::vector<std::string> notes, std::string file_kind,
                             std::vector<int> unreadable_ranks) {
  JobIndex index;
  index.errors_ = std::move(errors);
  index.file_kind_ = std::move(file_kind);
  index.Build(std::move(files));
  // Only ranks still without a readable file: another file of the rank may have been read.
  std::sort(unreadable_ranks.begin(), unreadable_ranks.end());
  for (const int r : unreadable_ranks) {
    if (std::binary_search(index.missing_ranks_.begin(), index.missing_ranks_.end(), r) &&
        (index.unreadable_ranks_.empty() || index.unreadable_ranks_.back() != r)) {
      index.unreadable_ranks_.push_back(r);
    }
  }
  index.notes_.insert(index.notes_.end(), std::make_move_iterator(notes.begin()),
                      std::make_move_iterator(notes.end()));
  return index;
}

void JobIndex::Build(std::vector<RankFile> files) {
  KeepRankPresences(&files, &notes_);
  // The order ReadTraceDir gives: by global rank (unknown ranks last), then pid.
  auto rank_key = [](const RankFile& f) { return f.rank < 0 ? INT_MAX : f.rank; };
  std::stable_sort(files.begin(), files.end(), [&](const RankFile& a, const RankFile& b) {
    if (rank_key(a) != rank_key(b)) return rank_key(a) < rank_key(b);
    return a.snap->pid < b.snap->pid;
  });
  files_ = std::move(files);
  Implausible implausible;
  for (const RankFile& f : files_) {
    stats_.records += f.ops.size();
    const int claimed = f.snap->world_size;
    if (claimed <= 0) continue;
    if (!trace::PlausibleWorldSize(claimed)) {
      if (implausible.files++ == 0) {
        implausible.first_size = claimed;
        implausible.first_path = f.snap->path;
      }
      continue;
    }
    world_size_ = std::max(world_size_, claimed);
  }
  stats_.files = files_.size();
  for (uint32_t f = 0; f < files_.size(); ++f) IndexFile(f);
  if (implausible.files > 0) {
    notes_.push_back(
        std::to_string(implausible.files) + " file(s) claim an implausible world size (" +
        std::to_string(implausible.first_size) + " in " + implausible.first_path + "; more than " +
        std::to_string(trace::kMaxWorldSize) + " ranks): ignored" +
        (world_size_ > 0 ? "" : "; the job's size is unknown, not all ranks were seen"));
  }
  if (implausible_seqs_ > 0) {
    notes_.push_back(std::to_string(implausible_seqs_) +
                     " record(s) with an impossible sequence number (beyond what their ring "
                     "holds) were skipped");
  }
  ListMissingRanks();
}

// The ranks below the world size without a file: the complement of the ranks present, so the work
// and memory follow the files, not the (plausible but possibly large) world size.
void JobIndex::ListMissingRanks() {
  if (world_size_ <= 0) return;
  std::vector<int> present;
  for (const RankFile& f : files_) {
    if (f.rank >= 0 && f.rank < world_size_) present.push_back(f.rank);
  }
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  missing_ranks_.reserve(world_size_ - present.size());
  int next = 0;
  for (int r : present) {
    for (; next < r; ++next) missing_ranks_.push_back(next);
    next = r + 1;
  }
  for (; next < world_size_; ++next) missing_ranks_.push_back(next);
}

CommModel& JobIndex::CommFor(uint64_t id) {
  auto [it, inserted] = comm_index_.try_emplace(id, static_cast<uint32_t>(comms_.size()));
  if (inserted) {
    comms_.emplace_back();
    comms_.back().id = id;
  }
  return comms_[it->second];
}

const CommModel* JobIndex::FindComm(uint64_t id) const {
  auto it = comm_index_.find(id);
  return it == comm_index_.end() ? nullptr : &comms_[it->second];
}

void JobIndex::IndexFile(uint32_t f) {
  const RankFile& file = files_[f];
  const trace::RingInfo& s = *file.snap;
  // This file's view of its communicators: comm rank, and the lane it fills in each.
  struct Local {
    uint32_t comm = 0;
    int comm_rank = -1;
    uint32_t lane = kNoRecord;
  };
  std::unordered_map<uint64_t, Local> local;  // node-based: pointers to entries stay valid
  local.reserve(s.comms.size() * 2 + 4);
  for (const trace::CommInfo& c : s.comms) {
    CommModel& m = CommFor(c.id);
    if (m.name.empty()) m.name = c.name;
    if (m.nranks < 0 && trace::PlausibleWorldSize(c.nranks)) m.nranks = c.nranks;
    if (m.parent_id == 0) m.parent_id = c.parent_id;
    if (m.split_index == 0) m.split_index = c.split_index;
    if (m.origin == 0) m.origin = c.origin;
    m.members.push_back({f, c.rank});
    local[c.id] = {comm_index_[c.id], c.rank, kNoRecord};
  }
  auto local_for = [&](uint64_t id) -> Local* {
    auto [it, inserted] = local.try_emplace(id);
    if (inserted) {
      CommFor(id);
      it->second.comm = comm_index_[id];
    }
    return &it->second;
  };
  // What depends only on the shape is resolved at its first placed record, not per record.
  struct ShapeSlot {
    Local* local = nullptr;         // the communicator's entry in `local`
    uint32_t p2p_lane = kNoRecord;  // p2p: index in the comm's p2p_lanes
  };
  std::vector<ShapeSlot> slots(file.shapes.size());

  for (uint32_t pos = 0; pos < file.ops.size(); ++pos) {
    const OpRecord& r = file.ops[pos];
    const OpShape& sh = file.shapes[r.shape];
    const auto op = static_cast<OpType>(sh.op);
    ShapeSlot& slot = slots[r.shape];
    if (trace::IsCollective(op)) {
      if (r.seq == 0 || sh.comm_id == 0) continue;  // rejected by NCCL, or unknown communicator
      if (slot.local == nullptr) slot.local = local_for(sh.comm_id);
      Local& l = *slot.local;
      CommModel& m = comms_[l.comm];
      if (l.lane == kNoRecord) {
        l.lane = static_cast<uint32_t>(m.lanes.size());
        m.lanes.push_back({f, l.comm_rank, 0, {}});
      }
      if (!Place(m.lanes[l.lane], file, r.seq, pos)) ++implausible_seqs_;
    } else if (trace::IsP2P(op)) {
      if (r.seq == 0 || sh.comm_id == 0) continue;
      if (slot.local == nullptr) slot.local = local_for(sh.comm_id);
      const Local& l = *slot.local;
      if (l.comm_rank < 0) {
        ++unplaced_;  // without our comm rank the pair cannot be named
        continue;
      }
      CommModel& m = comms_[l.comm];
      const bool send = op == OpType::kSend;
      if (slot.p2p_lane == kNoRecord) {
        const int src = send ? l.comm_rank : sh.peer;
        const int dst = send ? sh.peer : l.comm_rank;
        const uint64_t key =
            static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32 | static_cast<uint32_t>(dst);
        auto [it, inserted] =
            m.pair_index.try_emplace(key, static_cast<uint32_t>(m.p2p_lanes.size()));
        if (inserted) {
          P2PLane lane;
          lane.src = src;
          lane.dst = dst;
          m.p2p_lanes.push_back(std::move(lane));
        }
        slot.p2p_lane = it->second;
      }
      P2PLane& lane = m.p2p_lanes[slot.p2p_lane];
      CollLane& side = send ? lane.sends : lane.recvs;
      side.file = f;
      side.comm_rank = l.comm_rank;
      (send ? lane.has_sends : lane.has_recvs) = true;
      if (!Place(side, file, r.seq, pos)) ++implausible_seqs_;
    } else if (IsInit(op)) {
      InitCall call;
      call.file = f;
      call.pos = pos;
      call.op = op;
      call.in_call = sh.result == trace::kResultInCall;
      if (op == OpType::kCommSplit || op == OpType::kCommShrink) {
        call.parent_id = sh.comm_id;
        call.split_index = static_cast<uint32_t>(r.seq);
        const int color = static_cast<int>(static_cast<uint32_t>(sh.aux >> 32));
        call.child_id = op == OpType::kCommSplit
                            ? trace::CommIdFromSplit(sh.comm_id, call.split_index, color)
                            : trace::CommIdFromShrink(sh.comm_id, call.split_index);
      } else {
        call.child_id = sh.comm_id;
        const auto nranks = static_cast<int64_t>(static_cast<uint32_t>(sh.aux));
        if (trace::PlausibleWorldSize(nranks)) call.nranks = static_cast<int>(nranks);
      }
      inits_.push_back(call);
    }
  }
}

OpState JobIndex::StateOf(uint32_t file, uint32_t pos) const {
  const RankFile& f = files_[file];
  const int32_t result = f.ShapeAt(pos).result;
  if (result != kNcclSuccess && result != kNcclInProgress && result != trace::kResultInCall) {
    return OpState::kCompleted;  // failed: it will never run, so nobody can wait on it here
  }
  const int64_t done = f.ops[pos].t_device_done_ns;
  if (done > 0) return OpState::kCompleted;
  if (trace::IsPending(done)) return OpState::kPending;
  return static_cast<int64_t>(pos) < f.last_completed_pos ? OpState::kCompleted : OpState::kUnknown;
}

OpState JobIndex::StateAt(const CollLane& lane, uint64_t seq) const {
  if (seq >= lane.EndSeq()) return OpState::kNotIssued;
  const uint32_t pos = lane.PosOf(seq);
  if (pos == kNoRecord) return OpState::kLost;
  return StateOf(lane.file, pos);
}

OpSignature SignatureOf(const OpShape& shape) {
  const auto op = static_cast<OpType>(shape.op);
  OpSignature s;
  s.op = shape.op;
  s.count = shape.count;
  s.dtype = shape.dtype;
  if (IsReducing(op)) s.redop = shape.redop;
  if (IsRooted(op)) s.root = shape.peer;
  return s;
}

std::string DescribeDifference(const OpSignature& a, const OpSignature& b) {
  std::string out;
  auto add = [&](const std::string& what, const std::string& x, const std::string& y) {
    if (!out.empty()) out += ", ";
    out += what + " " + x + " vs " + y;
  };
  if (a.op != b.op) {
    add("type", trace::OpTypeName(static_cast<OpType>(a.op)),
        trace::OpTypeName(static_cast<OpType>(b.op)));
  }
  if (a.count != b.count) add("count", std::to_string(a.count), std::to_string(b.count));
  if (a.dtype != b.dtype) add("dtype", trace::DataTypeName(a.dtype), trace::DataTypeName(b.dtype));
  if (a.redop != b.redop && a.redop >= 0 && b.redop >= 0) {
    add("redop", trace::RedOpName(a.redop), trace::RedOpName(b.redop));
  }
  if (a.root != b.root) add("root", std::to_string(a.root), std::to_string(b.root));
  return out;
}

std::string DescribeOp(const trace::RecordData& r) {
  const auto op = static_cast<OpType>(r.op);
  std::string out = trace::OpTypeName(op);
  if (r.seq != 0) out += " #" + std::to_string(r.seq);
  if (trace::IsCollective(op) || trace::IsP2P(op)) {
    out += " count=" + std::to_string(r.count) + " " + trace::DataTypeName(r.dtype);
    if (IsReducing(op)) out += " " + trace::RedOpName(r.redop);
    if (IsRooted(op)) out += " root=" + std::to_string(r.peer);
    if (trace::IsP2P(op))
      out += (op == OpType::kSend ? " to peer " : " from peer ") + std::to_string(r.peer);
  }
  return out;
}

}  // namespace ncclscope::hang_detector
