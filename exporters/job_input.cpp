#include "exporters/job_input.h"

#include "exporters/fr_evidence.h"
#include "hang_detector/parallel_compact.h"
#include "trace/ring_reader.h"

namespace ncclscope::exporters {

std::optional<JobInput> OpenJobInput(const std::string& dir, const std::string& job,
                                     std::string* error) {
  std::string list_error;
  const std::vector<std::string> rings = trace::ListRingFiles(dir, &list_error);
  if (!list_error.empty()) {
    *error = list_error;
    return std::nullopt;
  }
  flight_recorder::FrDumpListing dumps;
  if (!flight_recorder::ListFrDumps(dir, &dumps, error)) return std::nullopt;
  JobInput input;
  // Without a dump, ring files as ever: a directory with neither gets the ring readers' own
  // account of it (no ring file, none readable), which callers extend with the dumps' absence.
  if (!rings.empty() || dumps.dumps.empty()) {
    input.notes = std::move(dumps.skipped);
    input.source = std::make_unique<DirRingSource>(dir, "", job, /*keep_mapped=*/false);
    if (!dumps.dumps.empty()) {
      input.notes.push_back(std::to_string(dumps.dumps.size()) +
                            " Flight Recorder dump(s) beside the ring files are not read: the "
                            "ring files hold what they do and more");
    }
    return input;
  }
  input.kind = JobInputKind::kFlightRecorder;
  auto fr = std::make_unique<FrRingSource>(dir);
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

std::optional<hang_detector::JobIndex> IndexJobInput(const JobInput& input, const std::string& dir,
                                                     const std::string& job, int threads,
                                                     std::string* error) {
  if (input.kind == JobInputKind::kRingFiles) {
    return hang_detector::JobIndex::FromDir(dir, {threads, job}, error);
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
