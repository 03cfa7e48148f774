// Communicator creation: ranks blocked inside ncclCommInitRank* / ncclCommSplit ("in call"
// records) for longer than the stall time, and the ranks that should have joined them but never
// called. For a split the expected ranks are the parent's members; for an init from a unique id,
// the job's ranks when the new communicator spans the job.
#include <algorithm>
#include <cstdio>
#include <map>

#include "hang_detector/detectors/detectors.h"
#include "hang_detector/ingest/presence_files.h"

namespace ncclscope::hang_detector {
namespace {

std::string CommIdHex(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

struct Group {
  std::vector<const InitCall*> calls;
};

// A culprit seen only through its presence file: started as the rank, never called NCCL.
const RankFile* PresenceOf(const Context& ctx, int rank) {
  const int f = ctx.FileOf(rank);
  if (f < 0) return nullptr;
  const RankFile& file = ctx.index.files()[static_cast<uint32_t>(f)];
  return IsPresence(file) ? &file : nullptr;
}

// "rank 7 is alive (pid 4242 on this node) but never called NCCL", or, where its process was not
// seen running (another host's file, a post-mortem), "rank 7 never called NCCL (pid 4242 on
// node1)". Ranks in one state are named together.
std::string NeverCalledWords(const Context& ctx, const std::vector<int>& ranks) {
  std::vector<int> alive, other;
  std::string alive_pids, other_pids;
  std::string alive_where, other_where;
  for (int r : ranks) {
    const auto f = static_cast<uint32_t>(ctx.FileOf(r));
    const RankLiveness& l = ctx.live[f];
    const trace::RingInfo& s = *ctx.index.files()[f].snap;
    const std::string where = l.local ? "this node" : s.host;
    const bool running = l.state == Liveness::kAlive && l.process == ProcessState::kRunning;
    std::string& pids = running ? alive_pids : other_pids;
    std::string& at = running ? alive_where : other_where;
    (running ? alive : other).push_back(r);
    pids += (pids.empty() ? "" : ",") + std::to_string(s.pid);
    // One place for the lot when they share it, else each pid's own.
    at = at.empty() || at == where ? where : "several hosts";
  }
  std::string out;
  if (!alive.empty()) {
    out = RankList(alive) + (alive.size() == 1 ? " is alive (pid " : " are alive (pids ") +
          alive_pids + " on " + alive_where + ") but never called NCCL";
  }
  if (!other.empty()) {
    out += (out.empty() ? "" : " and ") + RankList(other) + " never called NCCL (pid" +
           (other.size() == 1 ? " " : "s ") + other_pids + " on " + other_where + ")";
  }
  return out;
}

void Report(const Context& ctx, const Group& g, std::vector<Verdict>* out) {
  const JobIndex& index = ctx.index;
  const InitCall& any = *g.calls.front();
  std::vector<const InitCall*> stuck;
  std::vector<int> joined;
  for (const InitCall* c : g.calls) {
    joined.push_back(ctx.RankOf(c->file));
    if (c->in_call && ctx.Stalled(c->file, c->pos)) stuck.push_back(c);
  }
  if (stuck.empty()) return;
  SortUnique(&joined);
  const bool split = any.parent_id != 0;
  std::vector<int> expected;
  std::string unknown_members;
  // Ranks that should join but have no data here: never culprits (absence is not guilt).
  std::vector<int> unseen;
  if (split) {
    if (const CommModel* parent = index.FindComm(any.parent_id)) {
      for (const CommMember& m : parent->members) expected.push_back(ctx.RankOf(m.file));
      if (parent->nranks == index.world_size()) unseen = index.missing_ranks();
    }
  } else if (any.nranks > 0 && any.nranks == index.world_size()) {
    for (uint32_t f = 0; f < index.files().size(); ++f) expected.push_back(ctx.RankOf(f));
    unseen = index.missing_ranks();
  } else if (any.nranks > 0) {
    std::vector<bool> seen(any.nranks, false);
    for (const InitCall* c : g.calls) {
      const int cr = static_cast<int>(index.files()[c->file].At(c->pos).aux >> 32);
      if (cr >= 0 && cr < any.nranks) seen[cr] = true;
    }
    for (int cr = 0; cr < any.nranks; ++cr) {
      if (!seen[cr]) unknown_members += (unknown_members.empty() ? "" : ",") + std::to_string(cr);
    }
  }
  SortUnique(&expected);
  Verdict v;
  v.cls = VerdictClass::kInitHang;
  for (int r : expected) {
    if (!std::binary_search(joined.begin(), joined.end(), r)) v.culprits.push_back(r);
  }
  int64_t first = INT64_MAX;
  for (const InitCall* c : stuck) {
    v.victims.push_back(ctx.RankOf(c->file));
    const RankFile& f = index.files()[c->file];
    first = std::min(first, f.Wall(f.At(c->pos).t_enter_ns));
  }
  SortUnique(&v.victims);
  v.unseen = unseen;
  v.unseen_count = static_cast<int>(unseen.size());
  v.since_s = ctx.SinceS(first);
  v.op = trace::OpTypeName(any.op);
  const uint64_t comm_id = split ? any.parent_id : any.child_id;
  v.comm_id = comm_id;
  if (const CommModel* c = index.FindComm(comm_id)) v.comm_name = ctx.CommName(*c);
  if (v.comm_name.empty()) v.comm_name = CommIdHex(comm_id);
  v.seq = split ? any.split_index : 0;
  // The child's name (commName) is in the ring from the moment its creation began.
  auto child_name = [&](uint64_t child) {
    const CommModel* c = index.FindComm(child);
    return c != nullptr && !c->name.empty() ? c->name + " " + CommIdHex(child) : CommIdHex(child);
  };
  const CommModel* any_child = split ? index.FindComm(any.child_id) : nullptr;
  const std::string child =
      any_child != nullptr && !any_child->name.empty() ? " (" + any_child->name + ")" : "";
  const std::string what =
      split ? "split #" + std::to_string(any.split_index) + " of " + v.comm_name + child
            : "creation of " + v.comm_name;
  std::vector<int> never_called;
  for (int r : v.culprits) {
    if (PresenceOf(ctx, r) != nullptr) never_called.push_back(r);
  }
  if (!v.culprits.empty()) {
    if (never_called.size() == v.culprits.size()) {
      v.summary = NeverCalledWords(ctx, never_called) + ": " +
                  (never_called.size() == 1 ? "it" : "they") + " never joined the " + what;
    } else {
      v.summary = RankList(v.culprits) + " never joined the " + what;
      if (!never_called.empty()) v.summary += "; " + NeverCalledWords(ctx, never_called);
    }
    v.summary += "; " + RankList(v.victims) + " wait inside it";
    if (!unseen.empty()) v.summary += "; " + RankList(unseen) + " not seen here";
  } else if (!unseen.empty()) {
    v.summary = RanksWait(v.victims) + " inside the " + what + "; " + RankList(unseen) +
                " (no ring file or digest here) should join it: the culprit is among them";
  } else if (!unknown_members.empty()) {
    v.summary = "comm ranks " + unknown_members + " never joined the " + what +
                " (their global ranks are unknown); " + RankList(v.victims) + " wait inside it";
  } else {
    v.culprits = v.victims;
    v.tie = true;
    v.summary = "every member called the " + what + " and none returned";
  }
  for (const InitCall* c : stuck) {
    if (v.evidence.size() >= 8) break;
    const auto& r = index.files()[c->file].At(c->pos);
    v.evidence.push_back(
        ctx.RecordEvidence(c->file, c->pos,
                           DescribeOp(r) + " in call" +
                               (split ? ", child " + child_name(c->child_id) : std::string())));
  }
  for (int r : v.culprits) {
    if (v.evidence.size() >= 12 || v.tie) break;
    if (const RankFile* p = PresenceOf(ctx, r)) {
      const trace::RingInfo& s = *p->snap;
      v.evidence.push_back({r, 0, false,
                            "never called NCCL: pid " + std::to_string(s.pid) + " on " + s.host +
                                " started as rank " + std::to_string(r) + " " +
                                ctx.Ago(s.start_realtime_ns) + " (its presence file)"});
      continue;
    }
    v.evidence.push_back({r, 0, false, "never called it"});
  }
  out->push_back(std::move(v));
}

}  // namespace

void CheckInits(const Context& ctx, std::vector<Verdict>* out) {
  // Few calls per job: an ordered map keyed by (parent or child id, split index) is plenty.
  std::map<std::pair<uint64_t, uint32_t>, Group> groups;
  for (const InitCall& c : ctx.index.inits()) {
    const auto key = c.parent_id != 0 ? std::make_pair(c.parent_id, c.split_index + 1)
                                      : std::make_pair(c.child_id, 0u);
    groups[key].calls.push_back(&c);
  }
  for (const auto& [key, g] : groups) Report(ctx, g, out);
}

}  // namespace ncclscope::hang_detector
