// Where a device stall is stuck when every member's kernel started: from the profiler's
// proxy_progress records (plugin/profiler/proxy_progress.h), which say for each (channel, peer,
// side) of the operation which step state its oldest unfinished network transfer waits in. NCCL's
// semantics (src/transport/net.cc, sendProxyProgress/recvProxyProgress) make each state say who is
// waited for:
//   send in SendWait (isend posted, not completed) while the peer's receive from it waits in
//     RecvWait (irecv posted, no data): the data left one end and never reached the other, the
//     link between them is at fault ("network");
//   send in SendGPUWait (its own GPU has not produced the data) while the peer's receive waits for
//     that data, and the sender waits for no data itself: the sender's GPU is stuck ("gpu");
//   send in SendPeerWait (data ready, no credit) while the receiver's side is absent or in
//     RecvGPUWait (its GPU has not consumed the previous data): the receiver holds it up, the
//     sender waits on it ("peer-wait", side send);
//   receive in RecvWait while its sender has no proxy operation for it at all: the sender never
//     got there ("peer-wait", side recv).
// In a ring every other member waits in RecvWait/SendGPUWait/SendPeerWait on its neighbours, which
// these rules do not blame: they pick the one link or rank the chain starts from. Peers reached
// over NVLink or shared memory have no proxy operations; such a stall stays a tie.
#pragma once

#include <cstdint>
#include <vector>

#include "hang_detector/detectors/detectors.h"

namespace ncclscope::hang_detector {

// `waiting_files`: every member that issued #seq, started it and has not completed it. When the
// proxy records single out a link or rank, rewrites v's culprits, victims, tie (false), summary,
// stall site and adds evidence, and returns true; otherwise leaves v alone. Thread-safe.
// `p2p`: #seq numbers a send/receive pair (the sender's send #seq and the receiver's receive
// #seq); otherwise a collective.
bool ResolveStallStage(const Context& ctx, const CommModel& comm, uint64_t seq,
                       const std::vector<uint32_t>& waiting_files, Verdict* v, bool p2p = false);

}  // namespace ncclscope::hang_detector
