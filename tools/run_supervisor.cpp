#include "tools/run_supervisor.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace ncclscope::tools {
namespace {

// SIGTERM: Kubernetes, Slurm's scancel and docker stop end a job with it. SIGHUP: a lost session.
// SIGINT, SIGQUIT: an interrupt, from a terminal or kill(1). SIGUSR1, SIGUSR2: a batch system's
// warning before the end (sbatch --signal), which the training script may act on (checkpoint).
constexpr int kPassedOn[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2};

bool IsIgnored(int sig) {
  struct sigaction current {};
  return sigaction(sig, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == SIG_IGN;
}

}  // namespace

bool PassOnInterrupt(int si_code, pid_t job_pgid, pid_t own_pgid) {
  return si_code != SI_KERNEL || job_pgid != own_pgid;
}

JobSupervisor::JobSupervisor(bool subreaper) {
  sigemptyset(&waited_);
  for (const int sig : kPassedOn) {
    // Started with it ignored (nohup, a shell's background job): the job inherits that, and
    // nothing is passed on.
    if (!IsIgnored(sig)) sigaddset(&waited_, sig);
  }
  // Children's statuses are needed: with SIGCHLD ignored (inherited) the kernel would discard
  // them. The job gets back what this process was given (RestoreInChild).
  chld_ignored_ = IsIgnored(SIGCHLD);
  if (chld_ignored_) signal(SIGCHLD, SIG_DFL);
  sigaddset(&waited_, SIGCHLD);
  sigprocmask(SIG_BLOCK, &waited_, &original_);
  bool subreaper_granted = false;
  if (subreaper) {
    subreaper_granted = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
    if (!subreaper_granted) perror("ncclscope run: --subreaper: prctl(PR_SET_CHILD_SUBREAPER)");
  }
  reap_ = getpid() == 1 || subreaper_granted;
}

void JobSupervisor::RestoreInChild() const {
  if (chld_ignored_) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGCHLD, &ignore, nullptr);
  }
  sigprocmask(SIG_SETMASK, &original_, nullptr);
}

bool JobSupervisor::Reap(pid_t job, pid_t* exporter, int* status) const {
  // No child left to wait for cannot happen with SIGCHLD at its default; should it, the job's
  // status is lost, and waiting on would be forever.
  constexpr int kStatusLost = 1 << 8;  // exit code 1
  if (!reap_) {
    const pid_t ended = waitpid(job, status, WNOHANG);
    if (ended < 0 && errno == ECHILD) *status = kStatusLost;
    return ended == job || (ended < 0 && errno == ECHILD);
  }
  bool job_ended = false;
  for (;;) {
    int st = 0;
    const pid_t ended = waitpid(-1, &st, WNOHANG);
    if (ended < 0 && errno == ECHILD && !job_ended) {
      *status = kStatusLost;
      return true;
    }
    if (ended <= 0) break;
    if (ended == job) {
      *status = st;
      job_ended = true;
    } else if (exporter != nullptr && ended == *exporter) {
      *exporter = -1;
    }
  }
  return job_ended;
}

int JobSupervisor::Wait(pid_t job, pid_t* exporter) const {
  for (;;) {
    // Before waiting for a signal: the job may have ended already (its SIGCHLD is then pending,
    // and another may have been merged into it).
    int status = 0;
    if (Reap(job, exporter, &status)) return status;
    siginfo_t info{};
    const int sig = sigwaitinfo(&waited_, &info);
    if (sig <= 0 || sig == SIGCHLD) continue;
    if ((sig == SIGINT || sig == SIGQUIT) &&
        !PassOnInterrupt(info.si_code, getpgid(job), getpgrp())) {
      continue;
    }
    kill(job, sig);
  }
}

}  // namespace ncclscope::tools
