// PyTorch Flight Recorder (FR) dumps made from ncclscope ring files: one FrDump per global rank of
// a job, so torch's analyzer (torchfrtrace) and anything else that reads FR dumps reads an
// ncclscope trace, and the FR importer's tests get dumps whose truth is known. The conventions
// (the importer, trace/flight_recorder/fr_records.h, relies on them; torch's Entry and
// dump in torch/csrc/distributed/c10d/FlightRecorder.hpp and FlightRecorderDetail.hpp):
//   process groups  one per communicator id of the job (fr_groups.h): name = decimal index in
//                   job order (communicators sorted by their lowest member global rank, then that
//                   rank's comm-table position), desc = the comm's recorded name, else
//                   "default_pg" for the first one spanning the world, else "pg<index>"; ranks =
//                   the members' global ranks in comm-rank order. A rank's pg_config lists the
//                   groups it is a member of; pg_id = the comm's position in its comm table.
//   entries         one per collective and send/recv record with seq > 0, oldest first;
//                   record_id = running index per rank from 0; op_id counts per group every op
//                   (each op of a coalesced group too; the closing entry repeats the last one's).
//   sequence ids    collective_seq_id counts per group each ungrouped collective and each
//                   coalesced group with a collective once (a group: records of one comm sharing a
//                   nonzero group_id with kFlagInGroup); it starts at the first retained
//                   collective's record seq, so ranks whose rings wrapped at different places
//                   still agree while no group was lost. p2p_seq_id counts each ungrouped
//                   send/recv and each group with a send/recv once, from 0 at the oldest retained
//                   record. Every entry carries both counters' current values, as torch's do.
//   groups          k ops -> k per-op entries (collectives only from version 2.7 on) with state
//                   "scheduled" and no times (torch records them with null events), then one
//                   closing entry "nccl:coalesced" with empty sizes, is_p2p when the group holds a
//                   send/recv, created at its last op's t_enter_ns, completed when every op
//                   completed (at the latest completion), else started at the earliest known
//                   device start, else scheduled.
//   sizes           1-D tensors from the record count: all_reduce/broadcast/reduce [[c]]/[[c]],
//                   all_gather [[c]]/[[c*n]], reduce_scatter [[c*n]]/[[c]], all_to_all
//                   [[c*n]]/[[c*n]], gather [[c]]/[[c*n]], scatter [[c*n]]/[[c]], send/recv
//                   [[c]]/[[c]] (n = comm size); dtypes by TorchNameOfNcclDtype.
//   times, states   wall clock through the file header's (realtime, monotonic) pair.
//                   time_created_ns = t_enter_ns. completed when t_device_done_ns > 0
//                   (time_discovered_completed_ns = it, retired); an untracked completion counts
//                   as completed, discovered when the next later record of the rank completed,
//                   when there is one. Otherwise "started" when a device_start (collective) or
//                   p2p_device_start (send/recv) record names it (time_discovered_started_ns =
//                   that record's t_enter_ns), else "scheduled". duration_ms when both are known.
//                   timeout_ms 600000 (torch's NCCL default); thread_id = tid, thread_name
//                   "pt_main_thread" (2.10 on).
//   buffer          only the newest buffer_size entries are kept (torch's
//                   TORCH_NCCL_TRACE_BUFFER_SIZE, default 2000; 0 keeps none); record_ids keep
//                   their running values, so a dump shows that older ones were retired.
//   pg_status       per group of the rank, keyed by pg_id: last_enqueued_collective = newest
//                   collective_seq_id, last_completed_collective = newest completed one,
//                   last_started_collective = newest with a known start, -1 when the rank's
//                   trace holds no device start at all (torch without timing); -1 when none.
//   versions        the keys of `version` (EncodeFrDump); comm_lib_version from the header's
//                   NCCL version code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/fr_groups.h"
#include "trace/trace_set.h"

namespace ncclscope::exporters::fr {

inline constexpr size_t kDefaultFrBufferSize = 2000;
inline constexpr int64_t kTorchNcclTimeoutMs = 600000;

struct FrExportOptions {
  std::string version = "2.10";  // must parse (flight_recorder::ParseFrVersion), 2.2 or later
  size_t buffer_size = kDefaultFrBufferSize;
};

// "2.28.9" for 22809 (NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9 on,
// major*1000 + minor*100 + patch before); "" for 0. Pure.
std::string CommLibVersion(uint32_t nccl_version);

// The dump of one rank's ring file. `groups` must be GroupsOfJob of the job it belongs to. Pure;
// thread-safe.
flight_recorder::FrDump DumpOfRank(const trace::RingSnapshot& file, const JobGroups& groups,
                                   const FrExportOptions& options);

struct FrRankDump {
  int global_rank = -1;
  std::string source;  // the ring file's path
  flight_recorder::FrDump dump;
  // When the rank was last seen alive (its heartbeat or newest record, wall-clock ns; 0 unknown):
  // the dump file's modification time, which is when torch's rank wrote it, and which readers
  // of dumps take as the time of the snapshot.
  int64_t last_alive_wall_ns = 0;
};

// The wall-clock time `file` last showed its writer alive: its heartbeat or its newest record's
// times, whichever is later; 0 when the header's clock pair is missing.
int64_t LastAliveWallNs(const trace::RingSnapshot& file);

struct FrJobDumps {
  std::vector<FrRankDump> ranks;   // by global rank
  std::vector<std::string> notes;  // what could not be said exactly, one line each
};

// Every rank's dump of one job's ring files (choose the job first: trace/job_choice.h). Files
// without a global rank, and a second file of a rank already seen, are left out with a note.
// Pure; thread-safe.
FrJobDumps DumpsOfJob(const std::vector<const trace::RingSnapshot*>& files,
                      const FrExportOptions& options);

}  // namespace ncclscope::exporters::fr
