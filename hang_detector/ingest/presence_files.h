// Presence files among a job's files (trace::kHeaderPresence): a process its launcher started as a
// rank writes one before calling NCCL, and its first NCCL call replaces it with the ring file. One
// left in the directory is a rank that was started and has not called NCCL; it is seen (never
// unseen), and its process is judged by the process check alone (its heartbeat never beats).
#pragma once

#include <string>
#include <vector>

#include "hang_detector/ingest/rank_file.h"
#include "trace/ring_layout.h"

namespace ncclscope::hang_detector {

inline bool IsPresence(const RankFile& f) {
  return (f.snap->flags & trace::kHeaderPresence) != 0;
}

// Leaves out of `files` the presence files that stand for no rank of the job:
// - one whose rank another file holds: the process has its ring file now (a reader can list both
//   while the first NCCL call replaces one with the other), or a wrapper (a shell under srun)
//   started the process that called NCCL, which speaks for the rank;
// - one whose job size is not the job's (the largest plausible world size the other files claim):
//   a launcher that is itself started as a rank of another job, such as torchrun under srun with
//   the node's SLURM_PROCID, is no rank of this one (one note says so);
// - one without a rank or a job size (no writer makes one; damage);
// - of several for one rank, all but the one started first (the outermost process of the rank).
// When no other file is there, the presence files' largest plausible size is the job's. Pure.
void KeepRankPresences(std::vector<RankFile>* files, std::vector<std::string>* notes);

}  // namespace ncclscope::hang_detector
