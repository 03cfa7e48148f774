// Ring files of a hung job written through the real RingWriter, for the watchdog's reader tests and
// its correlation benchmark: `ranks` ranks of one node share a world communicator and each fills
// its ring (and wraps it `laps` times) with completed allreduces; then every rank but the culprit
// issues the next one, which stays pending. The writers stay open (their pid is the caller's, a
// live process), so a test can still append, stamp completions and beat the heartbeat.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trace/ring_writer.h"

namespace ncclscope::testing {

struct HungJob {
  std::vector<std::unique_ptr<trace::RingWriter>> writers;  // by global rank
  std::vector<uint64_t> stuck_slots;  // per rank: the pending record's slot; UINT64_MAX for none
  uint64_t world_id = 0;
  int culprit = 0;
};

struct HungJobOptions {
  int ranks = 8;
  uint64_t capacity = 65536;  // NCCLSCOPE_RING_RECORDS' default
  double laps = 1.25;         // records written per rank, in ring capacities
  int culprit = 2;
  std::string job = "bench";
};

// Writes the job into dir; false with *error on failure.
bool WriteHungJob(const std::string& dir, const HungJobOptions& options, HungJob* job,
                  std::string* error);

// Appends one completed allreduce on the world communicator to `rank`'s ring (the job moves).
void AppendCompleted(HungJob* job, int rank);

}  // namespace ncclscope::testing
