#include "collectives/twins/alltoall_twin.h"

#include <cstring>

#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {
namespace {

bool PullBlock(const AlltoAllTwinCall& c, const AlltoAllPeerMemory& m, uint32_t b, Stall* stall) {
  const AlltoAllPlan& p = *c.plan;
  const size_t per_peer = p.packs_per_peer;
  auto each_pack = [&](auto f) { ForEachPackOfBlock(0, per_peer, b, p.blocks, p.threads, f); };
  const auto* input = static_cast<const unsigned char*>(c.input);
  if (p.copy_in) {
    unsigned char* staging = m.staging[c.rank];
    for (int s = 0; s < c.nranks; ++s) {
      const size_t base = static_cast<size_t>(s) * per_peer;
      each_pack([&](size_t i) {
        std::memcpy(staging + (base + i) * kPackBytes, input + (base + i) * kPackBytes, kPackBytes);
      });
    }
  }
  const BarrierSide side{c.rank, c.nranks, c.epoch, c.deadline_ns, m.signal};
  if (!CrossBarrier(side, b, Barrier::kStart, stall)) return false;
  auto* out = static_cast<unsigned char*>(c.output);
  const size_t mine = static_cast<size_t>(c.rank) * per_peer;  // my block in every rank's input
  for (int j = 1; j <= c.nranks; ++j) {
    const int peer = (c.rank + j) % c.nranks;  // rank+1 first, itself last
    const auto* from =
        p.copy_in ? m.staging[peer] : static_cast<const unsigned char*>(c.peer_input[peer]);
    const size_t to = static_cast<size_t>(peer) * per_peer;
    each_pack([&](size_t i) {
      std::memcpy(out + (to + i) * kPackBytes, from + (mine + i) * kPackBytes, kPackBytes);
    });
  }
  // No rank leaves while another may still read its staging (or sendbuff): the next call's copy-in
  // rewrites it, and the user may reuse the sendbuff once the call is done.
  return CrossBarrier(side, b, Barrier::kEnd, stall);
}

}  // namespace

bool RunAlltoAllTwin(const AlltoAllTwinCall& call, const AlltoAllPeerMemory& mem,
                     Stall* stall) noexcept {
  const AlltoAllPlan& p = *call.plan;
  if (p.algorithm != Algorithm::kPull) return true;  // nothing of ours to run
  // Blocks run one after another here; on the GPU they run at once. Every rank walks them in the
  // same order, so block b's barriers meet.
  for (uint32_t b = 0; b < p.blocks; ++b) {
    if (!PullBlock(call, mem, b, stall)) return false;
  }
  return true;
}

}  // namespace ncclscope::collectives
