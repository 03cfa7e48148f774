// Self-checking data in the manner of nccl-tests: every input element is a function of
// (seed, communicator, step, op, source rank, index), and every expected output is computed
// locally from the same function. Values are chosen so every dtype holds them, and every partial
// reduction of them, exactly, whatever order the library reduces in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// Largest n such that 0..n are all exact in the dtype (capped to keep values small and varied),
// and the largest power of two it holds.
struct DtypeLimits {
  double exact_int;
  int max_pow2;
};
DtypeLimits dtypeLimits(ncclDataType_t dtype);

// Identifies one op instance of one communicator group across all its ranks.
struct PatternKey {
  uint64_t seed = 0;
  int comm = 0;   // communicator index in JobLayout
  int step = 0;   // global step
  int op = 0;     // op index within the step
  int part = -1;  // a coalesced op's collective: its index in the group; -1 outside one
};

// What the values must survive: the op, its reduction, dtype and premul scalar, and how many
// ranks contribute. Thread-safe (pure).
struct PatternShape {
  OpKind kind = OpKind::kAllReduce;
  RedOp redop = RedOp::kSum;
  ncclDataType_t dtype = ncclFloat32;
  double scalar = 1.0;
  int nranks = 1;
};

// The value source rank `src` (rank in the communicator) contributes at element `index`.
double inputValue(const PatternKey& key, const PatternShape& shape, int src, size_t index);

// The reduction of every rank's inputValue at `index`, as NCCL defines the op (avg: integer
// division for integer dtypes). Pure.
double reducedValue(const PatternKey& key, const PatternShape& shape, size_t index);

// How far a correct result may be from reducedValue: 0 except for avg, and premulsum with a
// scalar that is not a power of two, on floating dtypes, where the library's rounding order shows.
double tolerance(const PatternShape& shape);

}  // namespace ncclscope::sim
