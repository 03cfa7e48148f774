// The order in which NCCL 2.28.9 puts a group's collectives into a plan, which is the order of
// their Coll events and of their seqNumbers (src/include/comm.h ncclTaskCollSorterInsert,
// src/enqueue.cc ncclPrepareTasks): roughly by size descending, then gathered by
// (function, reduction op, datatype) in order of first appearance, each gathering smallest first;
// and the order of its send and receive tasks, which is the order of their P2p events
// (src/enqueue.cc scheduleP2pTasksToPlan): by the communicator's p2p schedule rounds.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/emulator/op_desc.h"

#include "sim/emulator/profiler.h"

namespace ncclsim {

// Whether NCCL plans an operation of this kind as a collective task (collTaskQueue); AlltoAll,
// Gather and Scatter are point-to-point parts, sends and receives too.
bool isPlannedCollective(OpKind kind);

// The plan order of one communicator's collectives of a group given in call order, as indices
// into `colls`. Pure.
std::vector<size_t> collPlanOrder(int nranks, const std::vector<const OpDesc*>& colls);

// The order in which the emulator runs a group's operations (given in call order), as indices:
// each communicator's collectives in its plan order, since NCCL puts them into one plan whose
// kernel works through them in that order (their kernels start, and report KernelCh events, in
// it); every rank orders its own calls alike (the order depends only on their arguments). Sends,
// receives and the point-to-point collectives keep their places. Pure.
std::vector<size_t> groupRunOrder(const std::vector<OpDesc>& descs);

// Reorders `colls` (collective tasks of one communicator, in call order, owners set) by
// collPlanOrder. Pure.
void orderCollTasks(int nranks, std::vector<ProfTask*>* colls);

// The peers of each round of `rank`'s p2p schedule (src/init.cc ncclP2pSchedule) when every rank
// is a node of its own, as the emulator tells the profiler (profilerCommInit): one rank per
// group, peer deltas in the quadratic order 0, 1, 3, 6, 10, ... mod the next power of two,
// skipping those past nranks. Round i sends to rank + delta_i and receives from rank - delta_i.
struct P2pRound {
  int send_rank;
  int recv_rank;
};
std::vector<P2pRound> p2pSchedule(int rank, int nranks);

// The order in which scheduleP2pTasksToPlan takes send and receive tasks given in call order
// (`send[i]`, `peer[i]`), as indices into them: each peer's sends and receives are FIFO queues;
// pass after pass over the rounds, a round takes the head send to its send rank, then the head
// receive from its receive rank. A peer outside the communicator (NCCL refuses it) comes last.
// Pure.
std::vector<size_t> p2pPlanOrder(int rank, int nranks, const std::vector<bool>& send,
                                 const std::vector<int>& peer);

// Reorders `p2ps` (send and receive tasks of one communicator's plan, in call order) by
// p2pPlanOrder. Pure.
void orderP2pTasks(int rank, int nranks, std::vector<ProfTask*>* p2ps);

}  // namespace ncclsim
