// One rank's Flight Recorder dump as the records of a ring file, so the correlator, the timeline
// and the cost table read FR dumps through the code that reads ring files. What FR does not know
// (device start per channel, the reduction op, roots, alltoall counts) stays "unknown" in the
// records, never a guessed value that could read as a disagreement between ranks:
//   communicator  one per process group: id FrCommId(pg name, ranks), comm rank = the index of the
//                 dump's rank in the group's ranks, name = the group's desc ("default_pg")
//   collectives   seq = collective_seq_id (torch counts a coalesced group once: the group is one
//                 record, its op from the closing entry's name or the members', count 0)
//   send / recv   seq = the n-th send to (receive from) that peer on that group, counted in the
//                 dump; only when the group's p2p history starts in it (p2p_seq_id 1 present),
//                 else seq 0 (not matched across ranks) and a note
//   times         time_created_ns is both entry and exit; completion = time_discovered_completed
//                 (else created + duration_ms, else created); scheduled or started = pending
//   device time   with timing on, an op's duration_ms (torch's CUDA events around it) becomes an
//                 event_duration record after the op's (trace/record.h); a coalesced group's
//                 time is not split among its sends and receives
//   device starts with timing on (a discovered start anywhere in the dump): a profiler_attach per
//                 communicator first, and a device_start (p2p_device_start) for each op whose
//                 start FR discovered, so "its kernel never started" can be said; without timing
//                 no start is known and that class is not reached
// Times are wall-clock nanoseconds (the header's clock pair maps them onto themselves).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/flight_recorder/fr_dump.h"
#include "trace/ring_visitor.h"

namespace ncclscope::flight_recorder {

// What the dump does not say about itself: FR files carry no rank (the file name does, reference
// flight-recorder.md 7) and no time of the dump (its modification time).
struct FrFileFacts {
  std::string path;
  int global_rank = -1;
  int64_t dump_wall_ns = 0;  // the rank was alive then: its heartbeat
};

struct FrRecords {
  trace::RingInfo info;
  std::vector<trace::StoredRecord> records;
  // Per record, the position in the dump's entries of the entry it stands for (an op's device
  // start and device time: the op's; a coalesced group's collective: its closing entry), or -1
  // for a profiler_attach. The record indices are the reader's, not FR's record_id: made-up
  // records take indices too, so whoever names a record to a user names this entry's record_id.
  std::vector<int32_t> entry_of;
  // What could not be mapped, one line each ("pg 3: p2p of this group began before the dump's
  // oldest entry: its sends and receives are not matched across ranks").
  std::vector<std::string> notes;
};

// The communicator id of a process group on every member: the same pg name and ranks give the same
// nonzero id (torch may reuse a name across split_group calls, so the ranks are part of it).
uint64_t FrCommId(const std::string& pg_name, const std::vector<int>& ranks);

// The records of `dump`, oldest first, indices from the first entry's record_id on. Pure.
FrRecords RecordsFromFrDump(const FrDump& dump, const FrFileFacts& facts);

}  // namespace ncclscope::flight_recorder
