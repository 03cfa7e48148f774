// Writes Flight Recorder dumps as the files torch writes: `<dir>/<prefix><global_rank>` (torch's
// DebugInfoWriter, TORCH_NCCL_DEBUG_INFO_TEMP_FILE + rank), pickle protocol 2 like torch's
// default dump or the JSON of _dump_nccl_trace_json. Unlike torch, each file is written under a
// temporary name and renamed, so a reader never sees half a dump; the directory is made 0700 and
// the files 0600, since they describe the job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace/flight_recorder/ring_to_fr.h"

namespace ncclscope::exporters::fr {

enum class FrFormat { kPickle, kJson };

inline constexpr char kDefaultFrPrefix[] = "nccl_trace_rank_";

// The bytes of `dump` in `format`. Pure.
std::string EncodeFrFile(const flight_recorder::FrDump& dump, FrFormat format);

// A prefix is a file-name start: not empty, no '/', not "." or "..". Pure.
bool IsValidFrPrefix(std::string_view prefix);

// Writes every dump to `dir` (created 0700 if missing; an existing one must be private, as
// trace::EnsurePrivateDir checks), replacing files of the same name. Returns false with *error
// naming the path and the reason at the first failure; *written lists the files written before
// it. Each file's modification time is its rank's last_alive_wall_ns when known: the time a
// reader of dumps takes as the snapshot's. Thread-compatible (temporary names carry the pid).
bool WriteFrDumps(const std::vector<FrRankDump>& dumps, const std::string& dir,
                  const std::string& prefix, FrFormat format, std::vector<std::string>* written,
                  std::string* error);

}  // namespace ncclscope::exporters::fr
