// The synthetic job of bench/synth_job: a tp x pp x dp training loop (world + three split
// communicators, pipeline send/recv between stages), and which operations every rank issued and
// completed once one injected culprit stops the job. Every rank runs the same program, so before
// the culprit's step everything completed and only the steps after it are simulated.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/record.h"

namespace ncclscope::bench {

enum class Fault {
  kMissing,  // the culprit never issues its tp collective #N (host stuck before it)
  kDesync,   // the culprit issues tp collective #N with a different count; it never completes
};

enum class CommKind : uint8_t { kWorld, kTp, kPp, kDp };

// One operation of a step's program.
struct Slot {
  trace::OpType op;
  CommKind comm;
  uint64_t count;
  int32_t dtype;
  int32_t redop;
  int peer_stage = -1;  // send/recv: the pipeline stage of the peer
};

struct Topology {
  int tp = 8, pp = 4, dp = 128;
  int World() const { return tp * pp * dp; }
  int Stage(int rank) const { return rank / tp % pp; }
  // The rank of `rank`'s pipeline neighbour at `stage` (same tp and dp index).
  int AtStage(int rank, int stage) const { return rank + (stage - Stage(rank)) * tp; }
};

// Step `step` of a rank at pipeline stage `stage`; a world allreduce every tenth step.
std::vector<Slot> StepProgram(const Topology& topo, int stage, int64_t step);

// What happened from the culprit's step on: per rank, the (step, slot) pairs it issued, in order,
// and whether each completed.
struct IssuedOp {
  int64_t step;
  uint32_t slot;
  bool completed;
  bool odd;  // the culprit's desynchronized call
};

struct Outcome {
  std::vector<std::vector<IssuedOp>> ops;  // per rank
  uint64_t culprit_seq = 0;                // the tp sequence number #N the fault is at
};

// Simulates steps stall_step.. until no rank can progress. A collective completes once every
// member reached it at the head of its stream, a send/recv once both sides did; a rank issues the
// next step only after everything it issued completed (a synchronizing training step).
Outcome SimulateStall(const Topology& topo, int64_t stall_step, int culprit, Fault fault);

// How many collectives of `kind` a rank at `stage` issued in steps [0, steps).
uint64_t CollectivesBefore(const Topology& topo, int stage, CommKind kind, int64_t steps);

}  // namespace ncclscope::bench
