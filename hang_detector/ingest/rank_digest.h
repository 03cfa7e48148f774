// What a node's digest keeps of one rank's RankFile: the frontier every detector needs to match
// this rank against the others (whatever still waits, the newest collectives of each communicator
// and of each send/recv pair, communicator creation, the profiler's marks), in a RankFile of its
// own, so the detectors run on it unchanged. A record left out reads as lost, exactly like one a
// wrapped ring overwrote: lanes start later or have holes (JobIndex::StateAt gives kLost there),
// and the writer indices of the records kept stay the writer's, so evidence names the same records.
// libc/libstdc++ only: the in-process watchdog may use it too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hang_detector/ingest/rank_file.h"

namespace ncclscope::hang_detector {

struct DigestLimits {
  // Newest collectives kept per communicator, and newest sends (receives) per (communicator, peer).
  size_t per_comm = 16;
  size_t per_pair = 16;
  // Newest records kept whatever they are (the rank's latest activity, the gaps between them).
  size_t newest = 64;
  // Waiting records kept (the oldest ones: a hang is about the first wait). A job without
  // completion tracking has every record "unknown"; the other rules still keep its frontier.
  size_t max_waiting = 1024;
  // NCCLSCOPE_NUMERICS: the newest samples kept per communicator (the hashes every rank took of
  // the same collectives), and for nan-origin, per communicator, the first sample whose input held
  // NaN/Inf with up to `clean_before_nan` clean samples before it.
  size_t numerics_per_comm = 16;
  size_t clean_before_nan = 4;
};

struct DigestCut {
  RankFile file;         // the records kept, with the header, comm table and shapes they use
  uint64_t omitted = 0;  // records of the original left out
};

// The digest's copy of `file`. Besides the limits it always keeps: the oldest record (how far back
// the ring reaches, which decides whether a wrapped member may have lost a collective), the newest
// record with a device completion (what makes untracked records before it read as completed),
// every communicator creation call, every profiler attach mark, the device_compute records of
// the collectives kept (with `device_compute` entries) and the numerics records the limits name
// (with `numerics` entries) and their collectives' own records. `file.remote` is copied.
// Thread-safe (reads `file` only).
DigestCut CutForDigest(const RankFile& file, const DigestLimits& limits);

// Recomputes what RankFileBuilder derives from the records (last_completed_pos, oldest waiting
// record) for records that did not come through it (a cut, a decoded digest). Not thread-safe.
void DeriveFrontier(RankFile* file);

}  // namespace ncclscope::hang_detector
