// One correlating watchdog per node and job: a non-blocking flock(2) on a lock file in the trace
// directory. The rank that holds it correlates and keeps the job's incident record
// (hang_detector/incident/); the others only read that. The kernel drops the lock when its holder
// dies (crash, SIGKILL, OOM), so the next stalled rank's attempt takes over; nothing has to notice
// the death.
//
// Each acquisition appends one line "<pid> <rank> <wall ns>" to the lock file itself, so the file
// says which processes correlated for the node and when (the end-to-end tests count them). The
// holder empties it first when it has grown past 64 KiB.
//
// A forked child shares its parent's open file description and with it the lock: it would keep the
// lock after the parent died. The child's copy is closed right after fork (pthread_atfork), so the
// lock stays the parent's alone. Not thread-safe: one watchdog thread owns a NodeLock.
//
// The exporters choose their job's correlator another way (exporters/multinode/peer_election.h):
// why the two cannot be one mechanism, and what each guarantees, is docs/design.md, "Why two
// elections".
#pragma once

#include <string>

namespace ncclscope::plugin {

class NodeLock {
 public:
  NodeLock() = default;
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;
  ~NodeLock() { Release(); }

  enum class Result {
    kHeld,    // this process holds it (acquired now or before)
    kOther,   // another process holds it
    kNoLock,  // the lock file cannot be opened or locked (error set): nobody arbitrates
  };
  // Tries to take the lock at `path` without blocking; the file is created 0600, never through a
  // symlink. rank goes into the holder line.
  Result TryAcquire(const std::string& path, int rank, std::string* error);
  // Gives the lock back (the incident is over). Harmless when not held.
  void Release();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  // The process that acquired it: in a forked child fd_ was closed by the fork handler and its
  // number may belong to the application by now, so the child never closes it.
  int owner_pid_ = -1;
};

}  // namespace ncclscope::plugin
