// Run-time controls of the emulated libnccl.so.2 (target ncclsim_nccl), used by the scenario
// runner to inject faults while a job runs.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Multiplies the modeled transfer time of every later operation of this process (all its
// communicators) by factor (>= 1 slows down; 1.0 = nominal). The initial value comes from
// NCCLSIM_LINK_SLOWDOWN. Operations already running keep their factor. Thread-safe; a factor that
// is not a finite number > 0 is ignored with one warning.
void ncclsimSetLinkSlowdown(double factor);

// Nonzero: from now on, nothing this process sends arrives anywhere (its links are hung, as a
// dead network port): its peers wait for data, its own sends wait for completion and then for
// credit; 0 lets later chunks through again (those sent while hung stay lost). Thread-safe.
void ncclsimSetLinkHung(int hung);

// Arms a silent corruption (the flip_output fault, docs/scenarios.md): the next collective this
// process calls (any thread; ncclSend/ncclRecv and empty calls do not take it) returns its output
// with bit `bit` inverted (bit b is bit b % 8 of byte b / 8 of the rank's receive buffer), as a
// faulty GPU or link would: no error, and the flip happens on the stream worker after the
// collective computed its output and before any later work of that stream runs. Its peers'
// outputs stay right. A bit past the end of that output, or a rank without one (Reduce and Gather
// off the root), drops the flip with one warning. Arming again before it was taken replaces the
// bit. Thread-safe.
void ncclsimFlipNextOutputBit(uint64_t bit);

#ifdef __cplusplus
}
#endif
