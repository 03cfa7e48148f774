// The MoE dispatch and combine kernels in part (b) of the GPU check: each process one rank, as a
// framework runs them (include/ncclscope/moe.h, "How it is called"): per case its own registered
// buffer of plan.buffer_bytes, exported with cuIpcGetMemHandle, the handles exchanged through the
// parent (ipc_ranks.cpp) and the peers' opened with cuIpcOpenMemHandle. Each run: every rank's
// fresh inputs (the same on every process, from the seed), this rank's dispatch, the experts, its
// combine; its outputs compared bit for bit with the CPU twins run for every rank in this process.
// The cases: hidden 128 top-1 and skewed top-8 (the latter also with combine's rank sums) for
// fp32, fp16 and bf16, each case's epochs wrapping halfway. No timings (time-sliced processes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/gpu_check/cases.h"
#include "collectives/gpu_check/device_rank.h"
#include "collectives/gpu_check/moe_device.h"
#include "collectives/include/ncclscope/moe.h"

namespace ncclscope::gpu_check {

inline constexpr int kMaxMoeIpcCases = 9;

// One rank's handles, one per case, as the parent passes them on.
struct MoeIpcHandles {
  int32_t cases = 0;
  CUipcMemHandle buffer[kMaxMoeIpcCases] = {};
};

struct MoeIpcCase {
  Case c;
  ncclscope_moe_plan plan{};
  MoeDeviceRank mem;
  void* peer[collectives::kMaxRanks] = {};  // every rank's buffer as mapped here (its own too)
};

struct MoeIpcRank {
  int rank = 0;
  int nranks = 0;
  uint32_t first_epoch = 0;
  std::vector<MoeIpcCase> cases;
};

// The cases for `nranks` processes with `reps` runs each: plans made, this rank's memory
// allocated, *handles filled. False with *error (what was allocated stays for FreeMoeIpc).
bool PrepareMoeIpc(const Driver& cu, int rank, int nranks, int reps, MoeIpcRank* m,
                   MoeIpcHandles* handles, std::string* error);

// Opens every peer's buffer of every case from `every_rank` (nranks entries). False with *error.
bool OpenMoePeers(const Driver& cu, const MoeIpcHandles* every_rank, MoeIpcRank* m,
                  std::string* error);

struct MoeIpcOutcome {
  int calls = 0;
  int wrong = 0;
  bool hang = false;  // a kernel outlived its bounded wait by far: leave the device alone
  std::string first;  // the first wrong output: case, run and what differs
};

// Every case's runs on `stream`, the kernels' waits bounded by timeout_ns, their stall record
// `stall` (this rank's, zeroed before each call). Stops at the first wrong case.
MoeIpcOutcome RunMoeIpc(const Driver& cu, const Kernels& k, CUstream stream, CUdeviceptr stall,
                        uint64_t seed, uint64_t timeout_ns, MoeIpcRank& m);

// Closes the peers' mappings (every rank done first), then frees this rank's memory (every rank
// closed first): the parent orders the two.
void CloseMoePeers(const Driver& cu, MoeIpcRank* m);
void FreeMoeIpc(const Driver& cu, MoeIpcRank* m);

}  // namespace ncclscope::gpu_check
