// Reading a job directory without holding it: each file is mapped, streamed through a
// RankFileBuilder that keeps only the compact records, and unmapped before the next one. Files are
// compacted by a few worker threads (each file is independent); the placement into communicator
// lanes, which touches shared state, runs afterwards on one thread in rank order, so the index is
// the same whatever the thread count.
#include <chrono>

#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/parallel_compact.h"
#include "trace/job_choice.h"
#include "trace/ring_reader.h"

namespace ncclscope::hang_detector {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::optional<JobIndex> JobIndex::FromDir(const std::string& dir, const IngestOptions& options,
                                          std::string* error) {
  return FromDirs({dir}, options, error);
}

std::optional<JobIndex> JobIndex::FromDirs(const std::vector<std::string>& dirs,
                                           const IngestOptions& options, std::string* error) {
  std::vector<std::string> paths;
  for (const std::string& dir : dirs) {
    std::string list_error;
    const std::vector<std::string> listed = trace::ListRingFiles(dir, &list_error);
    if (!list_error.empty()) {
      *error = list_error;
      return std::nullopt;
    }
    paths.insert(paths.end(), listed.begin(), listed.end());
  }
  const auto t0 = std::chrono::steady_clock::now();
  CompactedFiles compacted =
      CompactInParallel(paths.size(), options.threads,
                        [&](size_t i, RankFileBuilder* builder, std::string* file_error) {
                          return trace::VisitRingFile(paths[i], builder, file_error);
                        });
  JobIndex index;
  index.stats_.threads = compacted.threads;
  index.stats_.read_s = SecondsSince(t0);
  std::vector<RankFile> readable = std::move(compacted.readable);
  index.errors_ = std::move(compacted.errors);
  // One job per index: another job's exited ranks would read as dead, its communicators as
  // missing members. The choice needs every header, so it follows the (parallel) compaction.
  std::vector<const trace::RingInfo*> infos;
  infos.reserve(readable.size());
  for (const RankFile& f : readable) infos.push_back(f.snap.get());
  const trace::JobChoice choice = trace::ChooseJob(infos, options.job);
  if (choice.LeftOut() > 0) {
    index.notes_.push_back(choice.Note());
    size_t kept = 0;
    for (size_t i = 0; i < readable.size(); ++i) {
      if (choice.keep[i] == 0) continue;
      // Never onto itself: a self-moved vector comes out empty.
      if (kept != i) readable[kept] = std::move(readable[i]);
      ++kept;
    }
    readable.resize(kept);
  }
  const auto t1 = std::chrono::steady_clock::now();
  index.Build(std::move(readable));
  index.stats_.place_s = SecondsSince(t1);
  return index;
}

}  // namespace ncclscope::hang_detector
