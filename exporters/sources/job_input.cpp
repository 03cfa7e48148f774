#include "exporters/sources/job_input.h"

#include "exporters/sources/fr_evidence.h"
#include "hang_detector/ingest/parallel_compact.h"
#include "trace/ring_reader.h"

namespace ncclscope::exporters {

std::optional<JobInput> OpenJobInput(const std::vector<std::string>& dirs, const std::string& job,
                                     std::string* error) {
  size_t rings = 0;
  size_t dumps = 0;
  std::vector<std::string> skipped;
  for (const std::string& dir : dirs) {
    std::string list_error;
    rings += trace::ListRingFiles(dir, &list_error).size();
    if (!list_error.empty()) {
      *error = list_error;
      return std::nullopt;
    }
    flight_recorder::FrDumpListing listing;
    if (!flight_recorder::ListFrDumps(dir, &listing, error)) return std::nullopt;
    dumps += listing.dumps.size();
    skipped.insert(skipped.end(), listing.skipped.begin(), listing.skipped.end());
  }
  JobInput input;
  // Without a dump, ring files as ever: a directory with neither gets the ring readers' own
  // account of it (no ring file, none readable), which callers extend with the dumps' absence.
  if (rings > 0 || dumps == 0) {
    input.notes = std::move(skipped);
    input.source = std::make_unique<DirRingSource>(dirs, "", job, /*keep_mapped=*/false);
    if (dumps > 0) {
      input.notes.push_back(std::to_string(dumps) +
                            " Flight Recorder dump(s) beside the ring files are not read: the "
                            "ring files hold what they do and more");
    }
    return input;
  }
  input.kind = JobInputKind::kFlightRecorder;
  auto fr = std::make_unique<FrRingSource>(dirs);
  input.fr = fr.get();
  input.source = std::move(fr);
  return input;
}

std::optional<hang_detector::JobIndex> IndexSource(RingSource& source, int threads,
                                                   std::string* error) {
  std::string list_error;
  const std::vector<std::string> names = source.List(&list_error);
  if (!list_error.empty()) {
    *error = list_error;
    return std::nullopt;
  }
  hang_detector::CompactedFiles compacted = hang_detector::CompactInParallel(
      names.size(), threads,
      [&](size_t i, hang_detector::RankFileBuilder* builder, std::string* file_error) {
        return source.Visit(names[i], 0, builder, file_error);
      });
  return hang_detector::JobIndex::FromFiles(std::move(compacted.readable),
                                            std::move(compacted.errors), source.Notes(),
                                            source.FileKind(), source.UnreadableRanks());
}

std::optional<hang_detector::JobIndex> IndexJobInput(const JobInput& input,
                                                     const std::vector<std::string>& dirs,
                                                     const std::string& job, int threads,
                                                     std::string* error) {
  if (input.kind == JobInputKind::kRingFiles) {
    return hang_detector::JobIndex::FromDirs(dirs, {threads, job}, error);
  }
  return IndexSource(*input.source, threads, error);
}

void AdjustForInput(const JobInput& input, hang_detector::AnalyzeOptions* options) {
  if (input.kind != JobInputKind::kFlightRecorder) return;
  options->job_ended = true;
  options->snapshot = true;
  options->probe = nullptr;
}

void NameRecordsAsInput(const JobInput& input, hang_detector::Analysis* analysis) {
  if (input.fr != nullptr) NameFrEntries(*input.fr, analysis);
}

}  // namespace ncclscope::exporters
