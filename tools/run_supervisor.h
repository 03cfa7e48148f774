// How `ncclscope run` waits for its job: as a launcher does (torchrun's elastic agent turns
// SIGTERM, SIGINT, SIGHUP and SIGQUIT into the same signal for its workers: PyTorch v2.5.0,
// torch/distributed/elastic/multiprocessing/api.py, _terminate_process_handler), the signals meant
// for the job are passed on to it; and as an init does (tini v0.19.0, src/tini.c: signals blocked
// and taken with sigtimedwait, orphans reaped with waitpid(-1, WNOHANG), the main child's status
// returned), running as PID 1 (a container's entry point, where Kubernetes sends its SIGTERM) or
// as a subreaper it reaps every orphaned descendant, so none stays a zombie. The job's own wait
// status is what `run` exits with.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace ncclscope::tools {

class JobSupervisor {
 public:
  // Blocks the signals passed on (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, less those
  // this process was started with ignored, as under nohup) and SIGCHLD, so none that arrives
  // before the job is forked is lost: they stay blocked until the process exits. With
  // `subreaper`, also makes this process the reaper of its orphaned descendants
  // (PR_SET_CHILD_SUBREAPER); as PID 1 it is one already. Call on the main thread before any
  // other thread starts and before forking the job and the exporter. Not thread-safe.
  explicit JobSupervisor(bool subreaper);

  // Gives a freshly forked child the signal mask this process started with. Async-signal-safe:
  // call between fork and exec.
  void RestoreInChild() const;

  // Waits until `job` ends, passing on every signal received meanwhile (SIGINT and SIGQUIT only
  // as PassOnInterrupt says), and returns its wait status. When reaping, every other child that
  // ends is collected too; *exporter is set to -1 when that child was the exporter, so it is not
  // signalled again. Not thread-safe.
  int Wait(pid_t job, pid_t* exporter) const;

  // Whether orphans are reaped (PID 1, or a subreaper was asked for and granted).
  bool reaps() const { return reap_; }

 private:
  sigset_t waited_{};          // the signals passed on, and SIGCHLD
  sigset_t original_{};        // the mask at construction
  bool chld_ignored_ = false;  // started with SIGCHLD ignored: the job is given that back
  bool reap_ = false;

  // Collects `job` (and, when reaping, every other ended child) without blocking; true with
  // *status once the job has ended.
  bool Reap(pid_t job, pid_t* exporter, int* status) const;
};

// Whether `run` passes on a SIGINT or SIGQUIT (from siginfo's si_code): not when the terminal sent
// it (SI_KERNEL: Ctrl-C, Ctrl-\ go to the terminal's foreground process group as a whole) and the
// job is in run's own process group, which therefore got it already; otherwise (kill -INT on
// run's pid, or a job that left run's group) it is passed on. Pure.
bool PassOnInterrupt(int si_code, pid_t job_pgid, pid_t own_pgid);

}  // namespace ncclscope::tools
