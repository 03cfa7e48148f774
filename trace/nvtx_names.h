// Reading the NVTX context of records (trace/record.h, "NVTX context"): which training step,
// phase and innermost range each record of a ring was made in.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "trace/record.h"

namespace ncclscope::trace {

// Where a record was made, as far as its ring tells. Empty names when unknown or none.
struct NvtxWhere {
  bool has_step = false;
  uint64_t step = 0;
  std::string phase;
  std::string range;  // the innermost range
  bool known() const { return has_step || !phase.empty() || !range.empty(); }
};

// The context names of one ring, learnt from its nvtx_phase_name / nvtx_range_name records.
// Not thread-safe while Add runs; const methods are safe from several threads afterwards.
class NvtxNames {
 public:
  // Takes the names of a name record; any other record is ignored. Later records of an id win.
  void Add(const RecordData& r);
  // Whether r is a name record (not an operation of the program).
  static bool IsNameRecord(const RecordData& r);
  // The context of a record's reserved word. A context whose names were overwritten by the ring
  // wrapping keeps its step and reads "#<id>" as its range.
  NvtxWhere Of(uint32_t reserved) const;
  bool empty() const { return phase_.empty() && range_.empty(); }
  // The names of context `id` as they were learnt, for copying them elsewhere (a node digest);
  // false when neither is known.
  bool NamesOf(uint32_t id, std::string* phase, std::string* range) const;

 private:
  std::unordered_map<uint32_t, std::string> phase_;
  std::unordered_map<uint32_t, std::string> range_;
};

// "step 12, collectives (innermost: layer3)", "step 12", "forward", "" when nothing is known.
std::string NvtxWhereText(const NvtxWhere& w);

}  // namespace ncclscope::trace
