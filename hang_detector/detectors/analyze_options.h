// What one analysis is asked: as of when, with which process checks, and the thresholds of its
// stall and confirmation rules. Read by the detectors and by the decision that confirms their
// verdicts; callers fill it for Analyze (decision/correlator.h). A plain value.
#pragma once

#include <cstdint>

#include "hang_detector/ingest/process_probe.h"

namespace ncclscope::hang_detector {

struct AnalyzeOptions {
  int64_t now_wall_ns = 0;  // CLOCK_REALTIME "now"; record times are converted to wall clock
  // Checks writer processes of this host; nullptr: no process checks (files from elsewhere, tests).
  const ProcessProbe* probe = nullptr;
  // A wait shorter than this is progress, not a hang.
  double stall_s = 2.0;
  // A heartbeat older than this means no progress at all. Must exceed the writers' heartbeat
  // period (NCCLSCOPE_HEARTBEAT_MS, 100 ms by default) several times over.
  double stale_s = 2.0;
  // The same for a ring file another host wrote, read here through a shared filesystem: mmap'd
  // writes reach other hosts only as the writer's kernel writes the pages back (tens of seconds
  // over NFS), so a live rank's heartbeat can look this old. Digests carry the writer's own
  // node's view instead and use stale_s.
  double foreign_stale_s = 60.0;
  // The job was ended by its launcher (timeout, scancel): analyse as of its last heartbeat even if
  // some process lingers, and judge liveness relative to the other ranks, not to now.
  bool job_ended = false;
  // The files are a snapshot of a job that may still have been running when it was taken
  // (PyTorch Flight Recorder dumps: written on a timeout, but also on request from a healthy
  // job): judged as of the newest file like job_ended, but a wait is confirmed as a hang by how
  // long it had lasted (the rule below), never merely because nothing followed it.
  bool snapshot = false;
  // Stage two. A hang-class wait whose culprit is not shown to be stuck (a rank busy outside NCCL,
  // an operation every member runs) is confirmed when it lasts
  // clamp(confirm_factor x the longest pause the job has shown there, confirm_floor_s,
  // confirm_ceiling_s): a checkpoint that took 40 s once may take 40 s again.
  double confirm_floor_s = 60;
  double confirm_factor = 3;
  double confirm_ceiling_s = 600;
};

}  // namespace ncclscope::hang_detector
