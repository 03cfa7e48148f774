#include "hang_detector/detectors/stall_stage.h"

#include <algorithm>
#include <string>

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;

// NCCL profiler step states (src/include/plugin/profiler/profiler_v4.h).
constexpr int kSendGpuWait = 8;
constexpr int kSendWait = 9;
constexpr int kRecvWait = 10;
constexpr int kRecvGpuWait = 12;
constexpr int kSendPeerWait = 20;

// The newest unfinished proxy_progress of one (channel, peer, side) of #seq on one file.
struct Side {
  uint32_t file = 0;
  uint32_t pos = 0;
  int peer = -1;  // comm rank
  int channel = -1;
  bool send = false;
  int state = 0;
};

bool IsP2pRecord(const OpShape& sh) {
  const auto op = static_cast<OpType>(sh.stream >> 32);
  return op == OpType::kSend || op == OpType::kRecv;
}

std::vector<Side> SidesOf(const RankFile& f, uint32_t file, uint64_t comm_id, uint64_t seq,
                          bool p2p) {
  std::vector<Side> out;
  std::vector<uint64_t> seen;  // (channel, peer, side) keys already taken (newest first)
  for (uint32_t p = f.size(); p-- > 0;) {
    const OpShape& sh = f.ShapeAt(p);
    if (sh.op != static_cast<uint32_t>(OpType::kProxyProgress) || sh.comm_id != comm_id ||
        f.ops[p].seq != seq || IsP2pRecord(sh) != p2p) {
      continue;
    }
    const bool send = (sh.stream & trace::kProxySend) != 0;
    const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(sh.dtype)) << 33 |
                         static_cast<uint64_t>(static_cast<uint32_t>(sh.peer)) << 1 |
                         (send ? 1 : 0);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    if ((sh.stream & trace::kProxyEnded) != 0) continue;
    out.push_back({file, p, sh.peer, sh.dtype, send, sh.redop});
  }
  return out;
}

struct Found {
  std::string stage;
  const Side* at = nullptr;  // the side named in the stall site
  int at_rank = -1;          // its global rank
  int peer_rank = -1;
  std::vector<int> culprits;
  std::string summary;
};

}  // namespace

bool ResolveStallStage(const Context& ctx, const CommModel& comm, uint64_t seq,
                       const std::vector<uint32_t>& waiting_files, Verdict* v, bool p2p) {
  const auto& files = ctx.index.files();
  std::vector<Side> sides;
  std::vector<int> comm_rank_of(files.size(), -1);
  for (const uint32_t file : waiting_files) {
    for (const CommMember& m : comm.members) {
      if (m.file == file) comm_rank_of[file] = m.comm_rank;
    }
    const std::vector<Side> s = SidesOf(files[file], file, comm.id, seq, p2p);
    sides.insert(sides.end(), s.begin(), s.end());
  }
  if (sides.empty()) return false;
  // The other end of a side: the peer's side of the same channel facing back.
  auto facing = [&](const Side& s) -> const Side* {
    const int me = comm_rank_of[s.file];
    const int peer_file = comm.MemberFile(s.peer);
    for (const Side& o : sides) {
      if (static_cast<int>(o.file) == peer_file && o.peer == me && o.channel == s.channel &&
          o.send != s.send) {
        return &o;
      }
    }
    return nullptr;
  };
  auto waits_for_data = [&](uint32_t file, int channel) {
    return std::any_of(sides.begin(), sides.end(), [&](const Side& o) {
      return o.file == file && o.channel == channel && !o.send && o.state == kRecvWait;
    });
  };
  auto global = [&](int comm_rank) {
    const int f = comm.MemberFile(comm_rank);
    return f >= 0 ? ctx.RankOf(static_cast<uint32_t>(f)) : -1;
  };
  Found found;
  // Preference: a link that lost data, a GPU that stopped producing, then a missing credit.
  for (int pass = 0; pass < 3 && found.stage.empty(); ++pass) {
    for (const Side& s : sides) {
      const Side* o = facing(s);
      const int me = ctx.RankOf(s.file);
      const int peer = global(s.peer);
      const std::string where = " on channel " + std::to_string(s.channel);
      if (pass == 0 && s.send && s.state == kSendWait && o != nullptr && o->state == kRecvWait) {
        found = {"network",
                 &s,
                 me,
                 peer,
                 {me, peer},
                 RankList({me}) + "'s send to " + RankList({peer}) + where +
                     " was handed to the network and never completed, and " + RankList({peer}) +
                     "'s receive waits for that data: the link " + std::to_string(me) + " -> " +
                     std::to_string(peer) + " is stuck"};
      } else if (pass == 1 && s.send && s.state == kSendGpuWait && o != nullptr &&
                 o->state == kRecvWait && !waits_for_data(s.file, s.channel)) {
        found = {"gpu",
                 &s,
                 me,
                 peer,
                 {me},
                 RankList({peer}) + " waits for data from " + RankList({me}) + where +
                     ", whose GPU " + "has not produced it though it waits for nothing itself"};
      } else if (pass == 2 && s.send && s.state == kSendPeerWait &&
                 (o == nullptr || o->state == kRecvGpuWait)) {
        found = {"peer-wait",
                 &s,
                 me,
                 peer,
                 {peer},
                 RankList({me}) + "'s send to " + RankList({peer}) + where +
                     " waits for its credit: " + RankList({peer}) +
                     (o == nullptr ? " posted no receive for it"
                                   : "'s GPU has not consumed the data it received")};
      } else if (pass == 2 && !s.send && s.state == kRecvWait && o == nullptr && peer >= 0 &&
                 std::find(waiting_files.begin(), waiting_files.end(),
                           static_cast<uint32_t>(comm.MemberFile(s.peer))) != waiting_files.end()) {
        found = {"peer-wait",
                 &s,
                 me,
                 peer,
                 {peer},
                 RankList({me}) + "'s receive from " + RankList({peer}) + where +
                     " waits for data that " + RankList({peer}) + " never started sending"};
      }
      if (!found.stage.empty()) break;
    }
  }
  if (found.stage.empty() || found.culprits.empty() ||
      std::find(found.culprits.begin(), found.culprits.end(), -1) != found.culprits.end()) {
    return false;
  }
  v->culprits = found.culprits;
  SortUnique(&v->culprits);
  v->victims.clear();
  for (const uint32_t f : waiting_files) {
    const int r = ctx.RankOf(f);
    if (!std::binary_search(v->culprits.begin(), v->culprits.end(), r)) v->victims.push_back(r);
  }
  SortUnique(&v->victims);
  v->tie = false;
  v->summary = (p2p ? "both kernels started; " : "every member's kernel started; ") + found.summary;
  v->stall.stage = found.stage;
  v->stall.rank = found.at_rank;
  v->stall.peer = found.peer_rank;
  v->stall.channel = found.at->channel;
  v->stall.side = found.at->send ? "send" : "recv";
  v->evidence.insert(
      v->evidence.begin(),
      ctx.RecordEvidence(found.at->file, found.at->pos,
                         "proxy progress of #" + std::to_string(seq) + " on " + ctx.CommName(comm) +
                             ": " + v->stall.side + " to/from " + std::to_string(found.peer_rank) +
                             ", channel " + std::to_string(found.at->channel) + ", state " +
                             std::to_string(found.at->state)));
  return true;
}

}  // namespace ncclscope::hang_detector
