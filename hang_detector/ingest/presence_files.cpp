#include "hang_detector/ingest/presence_files.h"

#include <algorithm>
#include <map>
#include <set>

#include "trace/world_size.h"

namespace ncclscope::hang_detector {
namespace {

int JobSize(const std::vector<RankFile>& files, bool of_presences) {
  int size = -1;
  for (const RankFile& f : files) {
    if (IsPresence(f) != of_presences) continue;
    const int claimed = f.snap->world_size;
    if (claimed > 0 && trace::PlausibleWorldSize(claimed)) size = std::max(size, claimed);
  }
  return size;
}

}  // namespace

void KeepRankPresences(std::vector<RankFile>* files, std::vector<std::string>* notes) {
  if (std::none_of(files->begin(), files->end(), IsPresence)) return;
  int job_size = JobSize(*files, false);
  if (job_size < 0) job_size = JobSize(*files, true);
  std::set<int> ranks_with_rings;
  for (const RankFile& f : *files) {
    if (!IsPresence(f) && f.rank >= 0) ranks_with_rings.insert(f.rank);
  }
  // The presence file kept for each rank: the earliest started.
  std::map<int, size_t> chosen;
  size_t other_jobs = 0;
  const RankFile* first_other = nullptr;
  for (size_t i = 0; i < files->size(); ++i) {
    const RankFile& f = (*files)[i];
    if (!IsPresence(f) || f.rank < 0 || ranks_with_rings.count(f.rank) != 0) continue;
    if (f.snap->world_size != job_size || f.rank >= job_size) {
      if (other_jobs++ == 0) first_other = &f;
      continue;
    }
    const auto [it, fresh] = chosen.try_emplace(f.rank, i);
    if (!fresh && f.snap->start_realtime_ns < (*files)[it->second].snap->start_realtime_ns) {
      it->second = i;
    }
  }
  if (other_jobs > 0) {
    const trace::RingInfo& s = *first_other->snap;
    notes->push_back(std::to_string(other_jobs) +
                     " presence file(s) of processes started as ranks of a job of another size "
                     "left out (pid " +
                     std::to_string(s.pid) + " on " + s.host + ": rank " +
                     std::to_string(s.global_rank) + " of " + std::to_string(s.world_size) +
                     "; this job has " + std::to_string(job_size) +
                     " ranks): a launcher started as a rank, not a rank of this job");
  }
  std::vector<RankFile> kept;
  kept.reserve(files->size());
  for (size_t i = 0; i < files->size(); ++i) {
    RankFile& f = (*files)[i];
    if (IsPresence(f)) {
      const auto it = chosen.find(f.rank);
      if (it == chosen.end() || it->second != i) continue;
    }
    kept.push_back(std::move(f));
  }
  *files = std::move(kept);
}

}  // namespace ncclscope::hang_detector
