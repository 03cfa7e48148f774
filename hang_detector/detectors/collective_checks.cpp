// Collectives, per communicator, in one walk over the sequence numbers every lane still holds:
// the first sequence number at which the ranks' operations differ (desync) and the lowest one not
// completed everywhere (the waiting-on view, and missing / device-stall when it has stalled).
// An all-to-all-shaped collective (allreduce, allgather, reduce-scatter, all-to-all) completed on
// any rank was issued by every rank: each result needs every member's data. A rooted one proves
// less: a broadcast's receiver completes once the root's data passed by (a small message sits in
// the next rank's buffer whether or not that rank issued it, NCCL's ring/tree chains forward it).
// So members without a ring file matter where nobody completed, or the collective is rooted.
#include <algorithm>

#include "hang_detector/detectors/detectors.h"
#include "hang_detector/detectors/device_stall.h"

namespace ncclscope::hang_detector {
namespace {

bool CompletionNeedsEveryone(uint32_t op) {
  switch (static_cast<trace::OpType>(op)) {
    case trace::OpType::kAllReduce:
    case trace::OpType::kAllGather:
    case trace::OpType::kReduceScatter:
    case trace::OpType::kAlltoAll:
      return true;
    default:
      return false;
  }
}

struct Issued {
  uint32_t file;
  uint32_t pos;
  OpSignature sig;
};

// The signature a strict majority of `votes` issued, if any.
const OpSignature* Majority(const std::vector<OpSignature>& votes) {
  for (const OpSignature& candidate : votes) {
    const size_t n = std::count(votes.begin(), votes.end(), candidate);
    if (n * 2 > votes.size()) return &candidate;
  }
  return nullptr;
}

// Sibling communicators: the other groups of the same split (same parent and split index), or,
// for communicators whose parent is unknown (the profiler plugin recording alone never learns
// it), the others of the same name. An SPMD program issues the same sequence on each, so they
// break a tie inside a two-rank group.
std::vector<OpSignature> FamilyVotes(const Context& ctx, const CommModel& comm, uint64_t seq) {
  std::vector<OpSignature> votes;
  for (const CommModel& c : ctx.index.comms()) {
    const bool same_split =
        comm.parent_id != 0 && c.parent_id == comm.parent_id && c.split_index == comm.split_index;
    const bool same_name =
        comm.parent_id == 0 && c.parent_id == 0 && !comm.name.empty() && c.name == comm.name;
    const bool sibling = c.id == comm.id || same_split || same_name;
    if (!sibling) continue;
    for (const CollLane& lane : c.lanes) {
      const uint32_t pos = lane.PosOf(seq);
      if (pos != kNoRecord) votes.push_back(SignatureOf(ctx.index.files()[lane.file].ShapeAt(pos)));
    }
  }
  return votes;
}

Verdict MakeDesync(const Context& ctx, const CommModel& comm, uint64_t seq,
                   const std::vector<Issued>& issued) {
  Verdict v;
  v.cls = VerdictClass::kDesync;
  v.comm_id = comm.id;
  v.comm_name = ctx.CommName(comm);
  v.seq = seq;
  std::vector<OpSignature> votes;
  for (const Issued& i : issued) votes.push_back(i.sig);
  const OpSignature* majority = Majority(votes);
  std::vector<OpSignature> family;
  if (majority == nullptr) {
    family = FamilyVotes(ctx, comm, seq);
    majority = Majority(family);
  }
  int64_t first = INT64_MAX;
  for (const Issued& i : issued) {
    first = std::min(
        first, ctx.index.files()[i.file].Wall(ctx.index.files()[i.file].At(i.pos).t_enter_ns));
  }
  v.since_s = ctx.SinceS(first);
  const Issued* odd = nullptr;
  const Issued* normal = nullptr;
  for (const Issued& i : issued) {
    const bool is_odd = majority == nullptr || !(i.sig == *majority);
    (is_odd ? v.culprits : v.victims).push_back(ctx.RankOf(i.file));
    if (is_odd && odd == nullptr) odd = &i;
    if (!is_odd && normal == nullptr) normal = &i;
  }
  v.tie = majority == nullptr;
  const auto& files = ctx.index.files();
  if (v.tie) {
    // No majority anywhere: every distinct operation is a suspect; name each one once.
    const Issued& a = issued.front();
    const Issued* b = &issued.front();
    for (const Issued& i : issued) {
      if (!(i.sig == a.sig)) b = &i;
    }
    v.op = trace::OpTypeName(static_cast<trace::OpType>(a.sig.op));
    v.summary = "ranks disagree at #" + std::to_string(seq) + " (" +
                DescribeDifference(a.sig, b->sig) + "); no majority to tell which is wrong";
  } else {
    v.op = trace::OpTypeName(static_cast<trace::OpType>(majority->op));
    v.summary = RankList(v.culprits) + " issued " + DescribeOp(files[odd->file].At(odd->pos)) +
                " where " +
                (v.victims.empty() ? std::string("its sibling groups") : RankList(v.victims)) +
                " issued " + trace::OpTypeName(static_cast<trace::OpType>(majority->op)) + " (" +
                DescribeDifference(*majority, odd->sig) + ")";
  }
  for (const Issued& i : issued) {
    const bool is_odd = majority == nullptr || !(i.sig == *majority);
    if (!is_odd && &i != normal) continue;  // one record of the majority is proof enough
    v.evidence.push_back(ctx.RecordEvidence(
        i.file, i.pos, DescribeOp(files[i.file].At(i.pos)) + " on " + v.comm_name));
  }
  if (!family.empty() && majority != nullptr) {
    v.summary += "; sibling groups agree with the majority";
  }
  SortUnique(&v.culprits);
  SortUnique(&v.victims);
  return v;
}

struct SeqStatus {
  std::vector<Issued> waiting;
  std::vector<int> completed, not_issued;
  std::vector<uint32_t> not_issued_files;
};

void Classify(const Context& ctx, const CommModel& comm, uint64_t seq,
              const std::vector<uint32_t>& silent_members, SeqStatus* st) {
  const JobIndex& index = ctx.index;
  for (const CollLane& lane : comm.lanes) {
    const OpState s = index.StateAt(lane, seq);
    if (s == OpState::kCompleted) {
      st->completed.push_back(ctx.RankOf(lane.file));
    } else if (IsWaitingState(s)) {
      const uint32_t pos = lane.PosOf(seq);
      st->waiting.push_back({lane.file, pos, SignatureOf(index.files()[lane.file].ShapeAt(pos))});
    } else if (s == OpState::kNotIssued) {
      st->not_issued.push_back(ctx.RankOf(lane.file));
      st->not_issued_files.push_back(lane.file);
    }
  }
  for (uint32_t f : silent_members) {
    st->not_issued.push_back(ctx.RankOf(f));
    st->not_issued_files.push_back(f);
  }
}

// "ranks 4-7" or "3 members" when their global ranks are not known.
std::string UnseenWords(const std::vector<int>& ranks, int count) {
  if (!ranks.empty() && static_cast<int>(ranks.size()) == count) return RankList(ranks);
  return std::to_string(count) + (count == 1 ? " member" : " members");
}

Evidence NotIssuedEvidence(const Context& ctx, const CommModel& comm, uint32_t file, uint64_t seq) {
  for (const CollLane& lane : comm.lanes) {
    if (lane.file != file || lane.pos.empty() || lane.pos.back() == kNoRecord) continue;
    return ctx.RecordEvidence(file, lane.pos.back(),
                              "its last collective on " + ctx.CommName(comm) + " is #" +
                                  std::to_string(lane.EndSeq() - 1) + "; #" + std::to_string(seq) +
                                  " never issued");
  }
  Evidence e;
  e.rank = ctx.RankOf(file);
  e.has_record = false;
  e.text = ctx.index.files()[file].snap->overwritten > 0
               ? "its ring wrapped past every collective on " + ctx.CommName(comm) +
                     "; its records reach back to before #" + std::to_string(seq) +
                     " was first issued, and none is #" + std::to_string(seq)
               : "no collective on " + ctx.CommName(comm) + " recorded at all";
  return e;
}

void CheckComm(const Context& ctx, const CommModel& comm, std::vector<Verdict>* out,
               std::vector<WaitingOn>* waiting_out) {
  const auto& files = ctx.index.files();
  uint64_t lo = 0, hi = 0;
  for (const CollLane& lane : comm.lanes) {
    lo = std::max(lo, lane.first_seq);
    hi = std::max(hi, lane.EndSeq());
  }
  // Members that never issued a collective here. A wrapped ring may just have lost them: such a
  // member is judged once the wait is known (below).
  std::vector<uint32_t> lane_files;
  for (const CollLane& l : comm.lanes) lane_files.push_back(l.file);
  std::sort(lane_files.begin(), lane_files.end());
  std::vector<uint32_t> silent_members, wrapped_members;
  for (const CommMember& m : comm.members) {
    if (std::binary_search(lane_files.begin(), lane_files.end(), m.file)) continue;
    (files[m.file].snap->overwritten == 0 ? silent_members : wrapped_members).push_back(m.file);
  }
  std::vector<uint32_t> known;
  for (const CollLane& l : comm.lanes) known.push_back(l.file);
  for (const CommMember& m : comm.members) known.push_back(m.file);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  const int unseen = comm.nranks > 0 ? comm.nranks - static_cast<int>(known.size()) : 0;

  bool desync_done = false, waiting_done = false;
  uint64_t desync_seq = UINT64_MAX;
  std::vector<int> desync_culprits;
  std::vector<Issued> issued;
  for (uint64_t seq = lo; seq < hi && !(desync_done && waiting_done); ++seq) {
    if (!desync_done) {
      issued.clear();
      for (const CollLane& lane : comm.lanes) {
        const uint32_t pos = lane.PosOf(seq);
        if (pos != kNoRecord)
          issued.push_back({lane.file, pos, SignatureOf(files[lane.file].ShapeAt(pos))});
      }
      const bool differ = std::any_of(issued.begin(), issued.end(),
                                      [&](const Issued& i) { return !(i.sig == issued[0].sig); });
      if (differ) {
        out->push_back(MakeDesync(ctx, comm, seq, issued));
        desync_done = true;
        desync_seq = seq;
        desync_culprits = out->back().culprits;
      }
    }
    if (waiting_done) continue;
    SeqStatus st;
    Classify(ctx, comm, seq, silent_members, &st);
    if (st.waiting.empty() && st.not_issued.empty()) continue;
    // A rank that died right after a collective leaves it pending while every peer completed it:
    // its completion was never observed, nobody waits there. The communicator's wait, if any, is
    // further on (the dead rank's next collective, which the others may be stuck in).
    // (A member whose ring wrapped may still be found not to have issued it, below, unless the
    // completion proves every member did.)
    const bool unobserved =
        !st.completed.empty() && st.not_issued.empty() && !st.waiting.empty() &&
        (wrapped_members.empty() || CompletionNeedsEveryone(st.waiting[0].sig.op)) &&
        std::all_of(st.waiting.begin(), st.waiting.end(), [&](const Issued& i) {
          const Liveness l = ctx.live[i.file].state;
          return l == Liveness::kDead || l == Liveness::kFinished;
        });
    if (unobserved) continue;
    waiting_done = true;
    if (st.waiting.empty()) continue;  // nobody has issued it yet: nothing waits
    WaitingOn w;
    w.comm_id = comm.id;
    w.comm_name = ctx.CommName(comm);
    w.seq = seq;
    w.op = trace::OpTypeName(static_cast<trace::OpType>(st.waiting[0].sig.op));
    int64_t first = INT64_MAX;
    bool stalled = false;
    for (const Issued& i : st.waiting) {
      w.issued.push_back(ctx.RankOf(i.file));
      first = std::min(first, files[i.file].Wall(files[i.file].At(i.pos).t_enter_ns));
      stalled = stalled || ctx.Stalled(i.file, i.pos);
    }
    // Every member issued #seq once a member completed it, where its result needs every
    // member's data (see the top of the file).
    const bool all_issued = !st.completed.empty() && CompletionNeedsEveryone(st.waiting[0].sig.op);
    // A wrapped member without a record here whose ring reaches back to before anyone issued
    // #seq: had it issued #seq, the record would be in its ring.
    for (uint32_t f : wrapped_members) {
      if (all_issued || files[f].size() == 0 || files[f].Wall(files[f].At(0).t_enter_ns) > first) {
        continue;
      }
      st.not_issued.push_back(ctx.RankOf(f));
      st.not_issued_files.push_back(f);
    }
    w.completed = st.completed;
    w.not_issued = st.not_issued;
    // Members without data here (another node's ranks, an unreachable node): unless all issued
    // it, whether they did is unknown. Named by global rank when the communicator spans the job.
    std::vector<int> fileless;
    if (!all_issued && unseen > 0) {
      w.unseen = unseen;
      if (comm.nranks == ctx.index.world_size() &&
          static_cast<int>(ctx.index.missing_ranks().size()) == unseen) {
        fileless = ctx.index.missing_ranks();
      }
    }
    w.since_s = ctx.SinceS(first);
    SortUnique(&w.issued);
    SortUnique(&w.not_issued);
    waiting_out->push_back(w);
    // Progressing, or explained by an earlier desync. At the desync's own #seq the desync explains
    // the ranks that issued it, not a member that never did: that one is a culprit of its own.
    if (!stalled || desync_seq < seq) continue;
    const bool desynced = desync_seq == seq;
    if (desynced && w.not_issued.empty()) continue;

    Verdict v;
    v.comm_id = comm.id;
    v.comm_name = w.comm_name;
    v.op = w.op;
    v.seq = seq;
    v.since_s = w.since_s;
    v.unseen = fileless;
    v.unseen_count = w.unseen;
    if (w.not_issued.empty() && w.unseen > 0) {
      // Absence is not guilt: every member seen issued it and waits; what holds it up lies with
      // members nobody here can see. A verdict without culprits, so nothing singles out a rank.
      v.cls = VerdictClass::kMissing;
      v.victims = w.issued;
      v.summary = RanksWait(v.victims) + "; " + UnseenWords(fileless, w.unseen) +
                  " (no ring file or digest here): the culprit is among them";
    } else if (!w.not_issued.empty()) {
      v.cls = VerdictClass::kMissing;
      v.culprits = w.not_issued;
      // The desync's culprits wait on their own mistake as much as on the missing rank.
      for (int r : w.issued) {
        if (!std::binary_search(desync_culprits.begin(), desync_culprits.end(), r))
          v.victims.push_back(r);
      }
      v.summary = RankList(v.culprits) + " never issued it";
      if (!desynced || !v.victims.empty()) v.summary += "; " + RanksWait(v.victims);
      if (desynced) {
        v.summary += "; " + RankList(desync_culprits) +
                     (desync_culprits.size() == 1 ? " also holds it up: its operation differs"
                                                  : " also hold it up: their operations differ") +
                     " (desync)";
      }
      if (w.unseen > 0) v.summary += "; " + UnseenWords(fileless, w.unseen) + " not seen here";
      for (uint32_t f : st.not_issued_files)
        v.evidence.push_back(NotIssuedEvidence(ctx, comm, f, seq));
    } else {
      v.cls = VerdictClass::kDeviceStall;
      v.culprits = w.issued;
      v.victims = w.completed;
      v.tie = st.completed.empty() && w.issued.size() > 1;
      v.summary = std::string(unseen > 0 ? "every member issued it (it completed on " +
                                               RankList(v.victims) + ")"
                                         : "every rank issued it") +
                  "; device work never completed on " + RankList(v.culprits) +
                  (v.tie ? " (no record tells which device is stuck)" : "");
      std::vector<uint32_t> waiting_files;
      for (const Issued& i : st.waiting) waiting_files.push_back(i.file);
      if (v.tie) LocalizeDeviceStall(ctx, comm, seq, waiting_files, &v);
      // A member's part queued on its stream behind another waiting operation never started:
      // this group waits for that one, which has its own verdict.
      const bool queued = std::any_of(st.waiting.begin(), st.waiting.end(), [&](const Issued& i) {
        return StreamBlocker(ctx.index, i.file, i.pos) >= 0;
      });
      if (v.tie && queued) continue;
    }
    for (const Issued& i : st.waiting) {
      if (v.evidence.size() >= 8) break;
      // The desync verdict cites the disagreeing records; here they would read as plain waits.
      if (std::binary_search(desync_culprits.begin(), desync_culprits.end(), ctx.RankOf(i.file)))
        continue;
      v.evidence.push_back(ctx.RecordEvidence(
          i.file, i.pos, DescribeOp(files[i.file].At(i.pos)) + " on " + w.comm_name + " waiting"));
    }
    out->push_back(std::move(v));
  }
}

}  // namespace

void CheckCollectives(const Context& ctx, std::vector<Verdict>* out,
                      std::vector<WaitingOn>* waiting) {
  for (const CommModel& comm : ctx.index.comms()) {
    if (!comm.lanes.empty()) CheckComm(ctx, comm, out, waiting);
  }
}

}  // namespace ncclscope::hang_detector
