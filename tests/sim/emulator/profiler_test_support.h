// Shared by the emulator's profiler-event tests: a two-rank job in one process, the calls each
// test makes, and checks of the device and proxy events every operation must produce.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>
#include <nccl.h>

#include "tests/sim/emulator/profiler_recorder.h"

namespace ncclsim_test {

// One rank's calls of a test on its communicator and stream; returns 0 when NCCL accepted them.
using IssueFn = int (*)(ncclComm_t comm, int rank, cudaStream_t stream, float* send, float* recv);

// 0 AllReduce, 1 Broadcast, 2 Reduce, 3 AllGather, 4 ReduceScatter, 5 AlltoAll, 6 Gather,
// 7 Scatter (roots 0), 8 rank 0 sends to rank 1; sizes of at least 32 elements per peer.
IssueFn issueKind(int kind);
// One user group: AllReduce, AllGather, a send to the other rank and a receive from it.
int issueMixedGroup(ncclComm_t comm, int rank, cudaStream_t stream, float* send, float* recv);

// Two ranks of one communicator in this process (ncclCommInitAll), one stream each.
struct TwoRanks {
  ncclComm_t comms[2] = {};
  CUstream streams[2] = {};
  std::vector<float> send[2], recv[2];
  std::thread::id caller = std::this_thread::get_id();

  int init();
  // Issues fn on rank 0 then rank 1 from this thread, then waits for both streams.
  int run(IssueFn fn);
};

// Runs body in a forked child (20 s deadline) and reports its failures to gtest.
void inChild(const std::function<int()>& body);

// Checks for rank r's events: the parent links NCCL documents (API event -> GroupApi, Coll ->
// CollApi with parentGroup Group, P2p -> P2pApi, KernelCh and ProxyOp -> Coll or P2p,
// ProxyStep -> ProxyOp).
int checkParents(const std::vector<simrec::Event>& ev, int r);
// Every task of rank r to another rank has one KernelCh per channel (start, state 22, stop), a
// part to itself none, and per channel and remote peer a ProxyOp (start, state 19, its steps, stop)
// whose steps go through net.cc's states, all from a thread other than `caller`; its ProxyOps start
// on one thread (the proxy's), not the one that starts its KernelCh events (the stream's).
int checkDeviceAndProxy(const std::vector<simrec::Event>& ev, int r, std::thread::id caller,
                        int channels);

// Both lists, side by side, for a failure message.
std::string diff(const std::vector<std::string>& want, const std::vector<std::string>& got);
// Whether rank r's events on `thread` (simrec::sequence) are `want`; reports the two side by side,
// headed by `what`, when they are not. Returns 0 when they are.
int checkSequence(const std::vector<simrec::Event>& ev, int r, std::thread::id thread,
                  const std::vector<std::string>& want, const std::string& what);
uint64_t hostNowNs();

}  // namespace ncclsim_test
