// Every wait of ncclscope's own collectives on another rank goes through this one helper: it spins
// until a flag reaches an epoch or a deadline passes, and on expiry says who waited for whom where,
// so a peer that never arrives turns into a reported, recorded failure (the call then fails over to
// NCCL or returns an error), never a silent hang. Lock-free, no allocation; it reads the clock (a
// vDSO read) once every kClockEvery spins and, past a short spin, yields the core (the CPU twin
// runs more ranks than cores; the kernels' device-side wait is their own).
#pragma once

#include <cstdint>

#include "collectives/planner/epoch.h"

namespace ncclscope::collectives {

// What a wait that expired was waiting for.
struct Stall {
  int rank = -1;  // the waiting rank
  int peer = -1;  // the rank whose flag never came
  uint32_t block = 0;
  Barrier barrier = Barrier::kStart;
  uint32_t want = 0;  // the epoch of the call
  uint32_t seen = 0;  // what the flag held at the deadline
};

inline constexpr uint32_t kClockEvery = 256;

// CLOCK_MONOTONIC, ns.
int64_t MonotonicNs() noexcept;

// Spins (acquire loads) until *flag reaches `want` (EpochReached) or MonotonicNs() passes
// deadline_ns. Returns true when reached; otherwise fills stall->seen and stall->want, the caller
// having filled who and where.
bool WaitForEpoch(const uint32_t* flag, uint32_t want, int64_t deadline_ns, Stall* stall) noexcept;

// Writes `epoch` into a peer's flag with release order: what this rank wrote before is visible to
// the peer once it sees the epoch.
void PostEpoch(uint32_t* flag, uint32_t epoch) noexcept;

// "rank 3 waited for rank 5 at the start barrier of block 2 (epoch 17, flag 16)".
void DescribeStall(const Stall& s, char* out, unsigned long cap) noexcept;

}  // namespace ncclscope::collectives
