// The numerics faults as one rank plays them (docs/scenarios.md): nan_input's value in a
// collective's input, the sticky poison a spreading NaN leaves behind, flip_output's schedule,
// and what the self-check must expect of the outputs they reach.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/scenario/op_data.h"
#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// Whether an output of (step, op) may hold NaN/Inf put there by a nan_input fault: one on that
// very op (of any rank), or a spreading one at or before it. Pure.
bool nanInputReaches(const Scenario& s, int step, int op);

// Whether a spreading nan_input fault took effect at or before (step, op), so that a NaN/Inf in an
// output of that op poisons the rank's later inputs. Pure.
bool nanSpreadsAt(const Scenario& s, int step, int op);

// Writes `value` into element `index` of the op's input (its send buffer, or the in-place input).
// False, writing nothing, when the dtype holds no NaN or Inf or the input has no such element.
bool writeInput(const OpCall& call, OpBuffers& buffers, size_t index, double value);

// Whether the op's output on this rank holds a NaN or an Inf where the op defines it.
bool outputHasNonFinite(const OpCall& call, int me, const OpBuffers& buffers);

// Size of the op's output on this rank in bits; 0 where it defines none.
uint64_t outputBits(const OpCall& call, int me, const OpBuffers& buffers);

// Inverts bit `bit` (< outputBits) of the op's output, where the call's recvbuff points.
void flipOutputBit(const OpCall& call, OpBuffers& buffers, uint64_t bit);

// Which collectives of one rank flip_output corrupts. Borrows the scenario; not thread-safe.
class OutputFlips {
 public:
  OutputFlips(const Scenario& s, int world_rank, int nranks);

  // Called once for every collective the rank issues (scenario ops, not pipelines or alltoallv),
  // in issue order: the fault's bit when this one is corrupted (the fault's own op, then with
  // `every` k each k-th collective after it), else nullopt. The first matching fault wins.
  std::optional<uint64_t> next(int step, int op);

 private:
  struct Armed {
    const FaultSpec* fault;
    std::optional<uint64_t> start;  // ordinal of the fault's own op, once issued
  };
  std::vector<Armed> faults_;
  uint64_t ordinal_ = 0;
};

}  // namespace ncclscope::sim
