// Run-time controls of the emulated libnccl.so.2 (target ncclsim_nccl), used by the scenario
// runner to inject faults while a job runs.
#pragma once

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

#ifdef __cplusplus
}
#endif
