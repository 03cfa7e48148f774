// The presence file (trace::kHeaderPresence). A rank that never calls NCCL (stuck in data loading,
// in an import, before init_process_group) leaves no ring file, so the ranks waiting for it in a
// communicator's creation could only say "the culprit is among the unseen". A process that its
// launcher started as a rank therefore writes, as the library loads and before the program runs,
// a small ring file with its rank and no records; readers see the rank alive and never in NCCL.
// Its first NCCL call replaces it with the ring file.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "plugin/core/config.h"
#include "plugin/core/launch_env.h"

namespace ncclscope::plugin {

// Whether this process is the rank its launcher names. It must have a rank and a job size, and
// its parent must not have been started as the same rank of a job of the same size: such a
// process is one the rank started (a spawned data-loader worker, a compiler subprocess, a
// `python -c` helper), which inherits the rank's environment. `parent` is nullopt when the
// parent's environment could not be read (a launcher of another user's, root's slurmstepd). A
// launcher that is itself started as a rank of a smaller job (torchrun under srun: SLURM_PROCID of
// the node) does write one; readers leave it out, its job size not being the job's. A forked
// child is never asked: the library's load runs once per program image, not per fork. Pure.
bool StandsForItsRank(const LaunchRank& self, const std::optional<LaunchRank>& parent);

// At the library's load (plugin/presence_load.cpp, in libncclscope.so only): writes this process's
// presence file into its trace directory when NCCLSCOPE_ENABLE and NCCLSCOPE_PRESENCE are on and
// StandsForItsRank, and then registers a fork handler (ForgetPresenceAfterFork) and an exit
// handler (MarkPresenceExited). `parent_environ` fills in the
// parent's starting environment (the bytes of /proc/<ppid>/environ) or returns false. Silent but
// for one warning line when the file cannot be written (configuration warnings wait for the
// first NCCL call, which prints them). Call once, before any other thread of ours runs; never
// throws.
void WritePresence(const EnvLookup& env,
                   const std::function<bool(std::string* bytes)>& parent_environ) noexcept;

// The starting environment of this process's parent (/proc/<ppid>/environ, at most 4 MiB); false
// when it cannot be read. Thread-safe.
bool ReadParentEnviron(std::string* bytes);

// The path of this process's presence file; empty when it has none (never written, retired,
// forgotten after a fork). Thread-safe.
std::string PresencePath();

// This process called NCCL (its ring file is made, or recording is off for good): removes the
// presence file. Thread-safe; keeps errno.
void RetirePresence() noexcept;

// At a normal exit: the rank exited without calling NCCL; its presence file says so
// (trace::kHeaderFinished). Thread-safe.
void MarkPresenceExited() noexcept;

// In a forked child: the presence file is its parent's, never the child's. Async-signal-safe.
void ForgetPresenceAfterFork() noexcept;

}  // namespace ncclscope::plugin
