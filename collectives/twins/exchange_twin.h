// The CPU twin of ncclscope's exchange kernel (kernels/exchange.cu): a group's sends and receives
// (planner/exchange_plan.h), pair by pair, through the sender's registered staging buffer, with the
// same work units, slots, flags and order of steps; run by one CPU thread per rank over memory
// every rank maps (threads of a test, or the emulator's rank processes over shared memory).
//
// Protocol, per part and per block b of its blocks_per_part (a unit; the kernel's block): the
// part's bytes go in chunks of slot_bytes, block b moving share b (sub_bytes) of each chunk. With
// k the pair's running chunk number (first_chunk + c + 1):
//   sender s to d:   wait until d freed chunk k-1 of s's slot (s's slot_free[d], block b); copy
//                    its share of chunk c from the sendbuff into s's staging at d x slot_bytes +
//                    b x sub_bytes; post k into d's chunk_ready[s] (block b). After the last chunk,
//                    wait until d freed it, so no later kernel rewrites the slot while d reads.
//   receiver d of s: wait until s's chunk k is ready (d's chunk_ready[s]); copy its share from s's
//                    slot for d into the recvbuff; post k into s's slot_free[d].
// A block whose share of a chunk is empty still waits and posts, so both sides count every chunk
// alike. Counters wrap (EpochReached). One buffer per pair: no chunk overlaps the next.
//
// The kernel runs every unit as its own block at once (they are co-resident); the twin runs a
// rank's units in turn on one thread, each as far as it can go without waiting, until all are done
// or the deadline passes: the same steps in an order the blocks could have taken.
#pragma once

#include <cstdint>

#include "collectives/planner/exchange_kernel_args.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::collectives {

// Runs this rank's part of one exchange. True when done; false when the deadline passed with a
// unit still waiting, *stall saying which (the receives' data are then undefined).
bool RunExchangeTwin(const ExchangeKernelArgs& args, int64_t deadline_ns, Stall* stall) noexcept;

}  // namespace ncclscope::collectives
