#include "exporters/multinode/peer_election.h"

namespace ncclscope::exporters {

bool Before(const NodeKey& a, const NodeKey& b) {
  const bool a_has = a.lowest_rank >= 0;
  const bool b_has = b.lowest_rank >= 0;
  if (a_has != b_has) return a_has;
  if (a.lowest_rank != b.lowest_rank) return a.lowest_rank < b.lowest_rank;
  if (a.host != b.host) return a.host < b.host;
  return a.instance < b.instance;
}

bool ShouldCorrelate(const NodeKey& self, const std::vector<PeerView>& peers) {
  if (self.lowest_rank < 0) return false;  // nothing of the job here: nothing to correlate from
  for (const PeerView& p : peers) {
    if (!p.self && p.reachable && Before(p.key, self)) return false;
  }
  return true;
}

Look LookAt(const NodeKey& self, const PeerView& peer) {
  if (peer.self) return Look::kNone;
  if (peer.key.lowest_rank < 0) return Look::kDigest;
  return Before(peer.key, self) ? Look::kHealth : Look::kNone;
}

}  // namespace ncclscope::exporters
