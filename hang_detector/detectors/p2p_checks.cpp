// Send/recv: the k-th send of A to B matches the k-th receive of B from A on the same
// communicator. Three findings: a pair that disagrees (count, dtype), an operation whose
// counterpart never came, and a cycle in the wait-for graph (each stuck operation waits for the
// operation queued before it on its stream, or, at the head of its stream, for whatever is queued
// before its counterpart), e.g. every pipeline stage sending before receiving.
#include <algorithm>
#include <iterator>
#include <unordered_map>

#include "hang_detector/detectors/detectors.h"
#include "hang_detector/detectors/p2p_stall.h"

namespace ncclscope::hang_detector {
namespace {

using NodeKey = uint64_t;  // file << 32 | record position
NodeKey Key(uint32_t file, uint32_t pos) {
  return static_cast<uint64_t>(file) << 32 | pos;
}

struct Unmatched {
  uint32_t file, pos;
  int blamed;  // global rank, -1 when nobody can be named
  std::string what;
  int unseen_peer = -1;  // comm rank of a peer with no data here (another node, unreachable)
};

int GlobalOf(const Context& ctx, const CommModel& comm, int comm_rank) {
  const int f = comm.MemberFile(comm_rank);
  return f >= 0 ? ctx.RankOf(static_cast<uint32_t>(f)) : -1;
}

std::string Describe(const Context& ctx, const CommModel& comm, uint32_t file, uint32_t pos) {
  return RankList({ctx.RankOf(file)}) + " " + DescribeOp(ctx.index.files()[file].At(pos)) + " on " +
         ctx.CommName(comm);
}

void CheckPair(const Context& ctx, const CommModel& comm, const P2PLane& lane,
               std::vector<Unmatched>* unmatched, std::unordered_map<NodeKey, NodeKey>* partner,
               std::vector<Verdict>* out) {
  const JobIndex& index = ctx.index;
  const uint64_t lo = std::max(lane.has_sends ? lane.sends.first_seq : 0,
                               lane.has_recvs ? lane.recvs.first_seq : 0);
  const uint64_t hi = std::max(lane.sends.EndSeq(), lane.recvs.EndSeq());
  bool desync_reported = false;
  for (uint64_t seq = lo; seq < hi; ++seq) {
    const uint32_t sp = lane.has_sends ? lane.sends.PosOf(seq) : kNoRecord;
    const uint32_t rp = lane.has_recvs ? lane.recvs.PosOf(seq) : kNoRecord;
    if (sp != kNoRecord && rp != kNoRecord) {
      const OpShape& ss = index.files()[lane.sends.file].ShapeAt(sp);
      const OpShape& rs = index.files()[lane.recvs.file].ShapeAt(rp);
      if (!desync_reported && (ss.count != rs.count || ss.dtype != rs.dtype)) {
        desync_reported = true;
        const trace::RecordData s = index.files()[lane.sends.file].At(sp);
        const trace::RecordData r = index.files()[lane.recvs.file].At(rp);
        Verdict v;
        v.cls = VerdictClass::kDesync;
        v.comm_id = comm.id;
        v.comm_name = ctx.CommName(comm);
        v.op = "send";
        v.seq = seq;
        v.culprits = {ctx.RankOf(lane.sends.file), ctx.RankOf(lane.recvs.file)};
        v.tie = true;  // one send, one receive: nothing says which side is wrong
        // A send meets a receive: name only what both sides must agree on (count, dtype).
        OpSignature recv_sig = SignatureOf(rs);
        const OpSignature send_sig = SignatureOf(ss);
        recv_sig.op = send_sig.op;
        recv_sig.root = send_sig.root;
        v.summary = "send and receive disagree (" + DescribeDifference(send_sig, recv_sig) + ")";
        v.since_s = ctx.SinceS(index.files()[lane.sends.file].Wall(s.t_enter_ns));
        v.evidence.push_back(ctx.RecordEvidence(lane.sends.file, sp, DescribeOp(s)));
        v.evidence.push_back(ctx.RecordEvidence(lane.recvs.file, rp, DescribeOp(r)));
        SortUnique(&v.culprits);
        out->push_back(std::move(v));
      }
      const bool sw = IsWaitingState(index.StateOf(lane.sends.file, sp));
      const bool rw = IsWaitingState(index.StateOf(lane.recvs.file, rp));
      if (sw && rw) {
        (*partner)[Key(lane.sends.file, sp)] = Key(lane.recvs.file, rp);
        (*partner)[Key(lane.recvs.file, rp)] = Key(lane.sends.file, sp);
      }
      continue;
    }
    // One side only. A missing side that was never issued (not lost to a wrap) is the finding.
    const bool send_side = sp != kNoRecord;
    const CollLane& have = send_side ? lane.sends : lane.recvs;
    const CollLane& other = send_side ? lane.recvs : lane.sends;
    const bool other_has = send_side ? lane.has_recvs : lane.has_sends;
    if (other_has && seq < other.EndSeq()) continue;  // lost, not missing
    const uint32_t pos = send_side ? sp : rp;
    if (pos == kNoRecord || !IsWaitingState(index.StateOf(have.file, pos)) ||
        !ctx.Stalled(have.file, pos)) {
      continue;
    }
    // The peer fell behind on a pair it has used before; on a pair it never used, the operation
    // itself went to the wrong place. A peer whose ring wrapped may have used the pair before its
    // oldest record: when that record is older than this operation, the counterpart would be in
    // its ring, and the peer fell behind; otherwise nobody can tell.
    const int peer = send_side ? lane.dst : lane.src;
    const std::string counterpart = send_side ? "receive" : "send";
    const int peer_file = comm.MemberFile(peer);
    const RankFile* pf =
        peer_file >= 0 ? &index.files()[static_cast<uint32_t>(peer_file)] : nullptr;
    const bool peer_wrapped = pf != nullptr && pf->snap->overwritten > 0;
    const bool peer_covers =
        peer_wrapped && pf->size() > 0 &&
        pf->Wall(pf->ops[0].t_enter_ns) <=
            index.files()[have.file].Wall(index.files()[have.file].ops[pos].t_enter_ns);
    std::string why;
    int blamed = GlobalOf(ctx, comm, send_side ? lane.src : lane.dst);
    const bool peer_unseen = pf == nullptr && !other_has;
    if (peer_unseen) {
      // Absence is not guilt, and not proof of a wrong peer either: its records are elsewhere.
      blamed = -1;
      why = ": the peer (comm rank " + std::to_string(peer) +
            ") is not seen here (no ring file or digest)";
    } else if (other_has) {
      blamed = GlobalOf(ctx, comm, peer);
      why = ": the peer never posted its " + counterpart;
    } else if (peer_covers) {
      blamed = GlobalOf(ctx, comm, peer);
      why = ": the peer never posted its " + counterpart +
            " (its ring wrapped past this pair, but reaches back to before this call)";
    } else if (peer_wrapped) {
      blamed = -1;
      why = ": the peer's ring wrapped past this pair; whether it ever used it is unknown";
    } else {
      why = ": the peer never used this pair";
    }
    Unmatched u{have.file, pos, blamed, Describe(ctx, comm, have.file, pos) + why,
                peer_unseen ? peer : -1};
    unmatched->push_back(std::move(u));
  }
}

// Which of `found` blame a rank that is only a link of a chain: its own oldest wait is one of
// these operations and waits on another rank, so it cannot post what is asked of it (a stage
// blocked in its receive from the stage before never sends to the stage after). Following each
// rank's wait leads to the head of its chain, the rank that waits on nobody here: that one is the
// culprit. Ranks that wait on each other in a circle stay culprits, all of them. O(found).
std::vector<bool> InChain(const Context& ctx, const std::vector<Unmatched>& found) {
  const auto& files = ctx.index.files();
  std::unordered_map<int, int> waits_on;  // rank -> the rank its blocking operation waits for
  for (const Unmatched& u : found) {
    const int own = ctx.RankOf(u.file);
    const Liveness l = ctx.live[u.file].state;
    if (u.blamed < 0 || u.blamed == own || files[u.file].oldest_waiting_pos != u.pos ||
        (l != Liveness::kAlive && l != Liveness::kEnded && l != Liveness::kAborted)) {
      continue;
    }
    waits_on.emplace(own, u.blamed);
  }
  enum : uint8_t { kUnseen, kOnWalk, kLink, kCircle };
  std::unordered_map<int, uint8_t> state;
  for (const auto& [start, unused] : waits_on) {
    std::vector<int> path;
    int n = start;
    while (state[n] == kUnseen && waits_on.count(n) != 0) {
      state[n] = kOnWalk;
      path.push_back(n);
      n = waits_on.at(n);
    }
    // The walk closed a circle at n: n and the ranks after it on the path wait on each other.
    const auto circle = state[n] == kOnWalk ? std::find(path.begin(), path.end(), n) : path.end();
    for (auto it = path.begin(); it != path.end(); ++it) state[*it] = it < circle ? kLink : kCircle;
  }
  std::vector<bool> out(found.size(), false);
  for (size_t i = 0; i < found.size(); ++i) {
    auto it = state.find(found[i].blamed);
    out[i] = it != state.end() && it->second == kLink;
  }
  return out;
}

void ReportUnmatched(const Context& ctx, const CommModel& comm, std::vector<Unmatched>& found,
                     std::vector<Verdict>* out) {
  if (found.empty()) return;
  const auto& files = ctx.index.files();
  // Waits on another rank first (the victims' view), then the culprits' own stray operations;
  // oldest first within each.
  std::sort(found.begin(), found.end(), [&](const Unmatched& a, const Unmatched& b) {
    const bool a_own = a.blamed == ctx.RankOf(a.file), b_own = b.blamed == ctx.RankOf(b.file);
    if (a_own != b_own) return b_own;
    return files[a.file].Wall(files[a.file].At(a.pos).t_enter_ns) <
           files[b.file].Wall(files[b.file].At(b.pos).t_enter_ns);
  });
  const std::vector<bool> in_chain = InChain(ctx, found);
  Verdict v;
  v.cls = VerdictClass::kP2PDeadlock;
  v.comm_id = comm.id;
  v.comm_name = ctx.CommName(comm);
  const auto& first = files[found[0].file].At(found[0].pos);
  v.op = trace::OpTypeName(static_cast<trace::OpType>(first.op));
  v.seq = first.seq;
  v.since_s = ctx.SinceS(files[found[0].file].Wall(first.t_enter_ns));
  std::vector<int> chained;  // blamed, but only waiting in turn
  std::vector<int> unseen_peers;
  for (size_t i = 0; i < found.size(); ++i) {
    const Unmatched& u = found[i];
    if (u.unseen_peer >= 0) unseen_peers.push_back(u.unseen_peer);
    if (u.blamed != -1) (in_chain[i] ? chained : v.culprits).push_back(u.blamed);
    v.victims.push_back(ctx.RankOf(u.file));
    if (v.evidence.size() < 8) v.evidence.push_back(ctx.RecordEvidence(u.file, u.pos, u.what));
  }
  SortUnique(&v.culprits);
  SortUnique(&chained);
  SortUnique(&v.victims);
  SortUnique(&unseen_peers);
  v.unseen_count = static_cast<int>(unseen_peers.size());
  std::erase_if(v.victims,
                [&](int r) { return std::binary_search(v.culprits.begin(), v.culprits.end(), r); });
  v.summary = std::to_string(found.size()) + " send/recv whose counterpart never came; ";
  if (!v.culprits.empty()) {
    v.summary += RankList(v.culprits) + " did not issue the matching operation";
  } else if (v.unseen_count > 0) {
    v.summary += "the peers are not seen here: the culprit is among them";
  } else {
    v.summary += "peers unknown";
  }
  if (!v.culprits.empty() && v.unseen_count > 0) {
    v.summary += "; " + std::to_string(v.unseen_count) + " peer(s) not seen here";
  }
  if (!chained.empty()) {
    v.summary += "; " + RankList(chained) + " did not either, " +
                 (chained.size() == 1 ? "itself waiting in an earlier one"
                                      : "each itself waiting in an earlier one");
  }
  out->push_back(std::move(v));
}

// Each waiting node has at most one successor, so cycles are found by walking successors.
void ReportCycles(const Context& ctx, const std::unordered_map<NodeKey, NodeKey>& partner,
                  std::vector<Verdict>* out) {
  const JobIndex& index = ctx.index;
  std::unordered_map<NodeKey, NodeKey> next;
  for (const auto& [node, other] : partner) {
    const uint32_t f = node >> 32, p = static_cast<uint32_t>(node);
    if (!ctx.Stalled(f, p)) continue;
    int64_t b = StreamBlocker(index, f, p);
    if (b >= 0) {
      next[node] = Key(f, static_cast<uint32_t>(b));
      continue;
    }
    const uint32_t of = other >> 32, op = static_cast<uint32_t>(other);
    b = StreamBlocker(index, of, op);
    if (b >= 0) next[node] = Key(of, static_cast<uint32_t>(b));
  }
  std::unordered_map<NodeKey, int> color;  // 1 on the current walk, 2 done
  for (const auto& [start, unused] : next) {
    std::vector<NodeKey> path;
    NodeKey n = start;
    while (color[n] == 0 && next.count(n) != 0) {
      color[n] = 1;
      path.push_back(n);
      n = next.at(n);
    }
    if (color[n] == 1) {
      const auto at = std::find(path.begin(), path.end(), n);
      Verdict v;
      v.cls = VerdictClass::kP2PDeadlock;
      v.tie = true;  // everyone in a cycle waits on the next: no single culprit
      int64_t first = INT64_MAX;
      for (auto it = at; it != path.end(); ++it) {
        const uint32_t f = *it >> 32, p = static_cast<uint32_t>(*it);
        const auto& r = index.files()[f].At(p);
        first = std::min(first, index.files()[f].Wall(r.t_enter_ns));
        v.culprits.push_back(ctx.RankOf(f));
        if (const CommModel* c = index.FindComm(r.comm_id); c != nullptr && v.comm_id == 0) {
          v.comm_id = c->id;
          v.comm_name = ctx.CommName(*c);
          v.op = trace::OpTypeName(static_cast<trace::OpType>(r.op));
          v.seq = r.seq;
        }
        v.evidence.push_back(ctx.RecordEvidence(f, p, DescribeOp(r) + " waits for the next"));
      }
      v.since_s = ctx.SinceS(first);
      SortUnique(&v.culprits);
      v.summary = "wait-for cycle through " + RankList(v.culprits) +
                  ": each operation is queued behind one that waits on the next rank";
      // Nobody in a cycle can move until someone outside it intervenes: proof, not a pause.
      v.confirmed = true;
      v.confirmed_by = "a wait-for cycle: each rank waits on the next";
      out->push_back(std::move(v));
    }
    for (NodeKey k : path) color[k] = 2;
  }
}

// One pair that disagrees cannot say which side is wrong (a tie). Three or more pairs (directions
// count apart) of one communicator that disagree and all share one rank (an all-to-all(v) whose
// counts one rank got wrong disagrees with every peer) name that rank: the others each agree with
// everyone else. Two are not enough: a pipeline stage between two peers that each made their own
// mistake would be blamed for both.
void NameTheCommonSide(size_t first, std::vector<Verdict>* out) {
  std::vector<Verdict*> ties;
  for (size_t i = first; i < out->size(); ++i) {
    Verdict& v = (*out)[i];
    if (v.cls == VerdictClass::kDesync && v.tie && v.culprits.size() == 2) ties.push_back(&v);
  }
  if (ties.size() < 3) return;
  std::vector<int> common = ties.front()->culprits;
  for (const Verdict* v : ties) {
    std::vector<int> both;
    std::set_intersection(common.begin(), common.end(), v->culprits.begin(), v->culprits.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  if (common.size() != 1) return;
  const int culprit = common.front();
  for (Verdict* v : ties) {
    for (int r : v->culprits) {
      if (r != culprit) v->victims.push_back(r);
    }
    v->culprits = {culprit};
    v->tie = false;
    v->summary += "; " + RankList({culprit}) + " is in all " + std::to_string(ties.size()) +
                  " pairs that disagree";
  }
}

}  // namespace

void CheckP2P(const Context& ctx, std::vector<Verdict>* out) {
  std::unordered_map<NodeKey, NodeKey> partner;
  for (const CommModel& comm : ctx.index.comms()) {
    std::vector<Unmatched> unmatched;
    const size_t first = out->size();
    for (const P2PLane& lane : comm.p2p_lanes)
      CheckPair(ctx, comm, lane, &unmatched, &partner, out);
    NameTheCommonSide(first, out);
    ReportUnmatched(ctx, comm, unmatched, out);
  }
  ReportCycles(ctx, partner, out);
  CheckP2PDeviceStalls(ctx, out);
}

}  // namespace ncclscope::hang_detector
