// Internal to the correlator: the numerics records of every rank (NCCLSCOPE_NUMERICS,
// trace/numerics_record.h) gathered per sampled collective, in the order the job ran them, for
// the nan-origin and corrupt-output checks. Every rank samples the same sequence numbers (each
// counts the same calls of a communicator), so the samples of one collective meet at
// (communicator, sequence number).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "hang_detector/detectors/detectors.h"
#include "trace/numerics_record.h"

namespace ncclscope::hang_detector {

// One rank's sample of a collective.
struct RankSample {
  int rank = -1;  // Context::RankOf its file
  uint32_t file = 0;
  uint32_t pos = 0;  // the numerics record's position in its file, for evidence
  const trace::NumericsSample* sample = nullptr;  // owned by the index's RankFile
};

// One sampled collective and every rank's sample of it.
struct SampledCollective {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  trace::OpType op = trace::OpType::kUnknown;
  const CommModel* comm = nullptr;  // null when no comm table knows the communicator
  std::vector<RankSample> ranks;    // by rank; one per rank (a second file of a rank is ignored)
  // When the job ran it: the NVTX step its calls were made in (has_step false when none carried
  // one) and the median entry time of its calls, wall clock. On one communicator both only grow
  // with the sequence number, so the order below never contradicts a communicator's own.
  bool has_step = false;
  uint64_t step = 0;
  int64_t enter_wall = 0;
};

// Every sampled collective of the job, ordered: by step and then entry time when every one carries
// a step, else by entry time alone; a communicator's collectives by sequence number. Empty without
// numerics records. Reads the index only.
std::vector<SampledCollective> GatherSamples(const Context& ctx);

// The ranks of `samples`, in their order.
std::vector<int> RanksOf(const std::vector<const RankSample*>& samples);
// "dp allreduce #12".
std::string CollectiveName(const Context& ctx, const SampledCollective& c);
// Sets the verdict's communicator, operation, sequence number and age from the collective.
void PlaceVerdictAt(const Context& ctx, const SampledCollective& c, Verdict* v);
// Members of c's communicator without a sample that `counts` accepts: unknown, never blamed nor
// cleared; into v->unseen (global ranks, where a file exists) and v->unseen_count.
template <typename Accept>
void AddUnseen(const Context& ctx, const SampledCollective& c, Accept counts, Verdict* v) {
  int seen = 0;
  std::vector<int> have;
  for (const RankSample& r : c.ranks) {
    if (counts(*r.sample)) have.push_back(r.rank), ++seen;
  }
  int members = seen;
  if (c.comm != nullptr) {
    members = std::max(c.comm->nranks, static_cast<int>(c.comm->members.size()));
    for (const CommMember& m : c.comm->members) {
      const int rank = ctx.RankOf(m.file);
      if (std::find(have.begin(), have.end(), rank) == have.end()) v->unseen.push_back(rank);
    }
  }
  SortUnique(&v->unseen);
  v->unseen_count = std::max(members - seen, static_cast<int>(v->unseen.size()));
}

// nan-origin (nan_origin.cpp) and corrupt-output (corrupt_output.cpp) over the gathered samples.
void CheckNanOrigin(const Context& ctx, const std::vector<SampledCollective>& job,
                    std::vector<Verdict>* out);
void CheckCorruptOutput(const Context& ctx, const std::vector<SampledCollective>& job,
                        std::vector<Verdict>* out);

}  // namespace ncclscope::hang_detector
