#include "exporters/digest_job.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "exporters/digest_codec.h"
#include "trace/job_choice.h"
#include "trace/ring_reader.h"

namespace ncclscope::exporters {
namespace {

// A writer process: the same rank reached twice (its node's digest and a local ring file, or two
// exporters sharing a directory) is counted once.
using WriterKey = std::tuple<std::string, int, int64_t>;
WriterKey KeyOf(const hang_detector::RankFile& f) {
  return {f.snap->host, f.snap->pid, f.snap->start_monotonic_ns};
}

}  // namespace

bool AssembleDigestJob(const std::vector<std::string>& from, const DigestJobOptions& options,
                       DigestJob* job, std::string* error) {
  *job = {};
  std::vector<DigestSource> sources;
  if (!ExpandSources(from, &sources, error)) return false;
  std::vector<hang_detector::RankFile> files;
  std::vector<std::string> errors;
  if (!options.local_dir.empty()) {
    std::string list_error;
    const std::vector<std::string> paths = trace::ListRingFiles(options.local_dir, &list_error);
    if (!list_error.empty()) {
      *error = list_error;
      return false;
    }
    for (const std::string& path : paths) {
      hang_detector::RankFile f;
      hang_detector::RankFileBuilder builder(&f);
      std::string why;
      if (trace::VisitRingFile(path, &builder, &why)) {
        files.push_back(std::move(f));
      } else {
        errors.push_back(why);
      }
    }
  }
  const std::vector<FetchedDigest> fetched = FetchDigests(sources, options.fetch);
  AssembleFetchedJob(std::move(files), std::move(errors), fetched, options.job,
                     options.fetch.max_bytes, job);
  return true;
}

void AssembleFetchedJob(std::vector<hang_detector::RankFile> files, std::vector<std::string> errors,
                        const std::vector<FetchedDigest>& fetched, const std::string& job_id,
                        size_t max_bytes, DigestJob* job) {
  *job = {};
  job->local_files = files.size();
  // Where each writer's rank is in `files`, and whether that copy is the best there is: a local
  // ring file, or the digest of the node that wrote it (which checked its process and read its
  // ring first hand; another node sharing the directory sees it late through the file system).
  std::map<WriterKey, std::pair<size_t, bool>> seen;
  for (size_t i = 0; i < files.size(); ++i) seen[KeyOf(files[i])] = {i, true};

  job->sources = fetched.size();
  uint64_t duplicates = 0;
  DigestBounds bounds;
  bounds.max_bytes = max_bytes;
  for (const FetchedDigest& d : fetched) {
    DecodedDigest decoded;
    std::string why;
    SourceReport& report = job->per_source.emplace_back();
    report.source = d.source;
    report.round_trip_s = d.round_trip_s;
    if (!d.ok) {
      report.error = d.error;
      job->source_errors.push_back(d.error);
      continue;
    }
    if (!DecodeNodeDigest(d.bytes, d.source, d.received_at_ns, &decoded, &why, bounds)) {
      report.error = why;
      job->source_errors.push_back(why);
      continue;
    }
    report.ok = true;
    report.host = decoded.header.host;
    ++job->sources_ok;
    job->max_round_trip_s = std::max(job->max_round_trip_s, d.round_trip_s);
    for (const std::string& line : decoded.header.unreadable) {
      errors.push_back(decoded.header.host + " (" + d.source + "): " + line);
    }
    for (hang_detector::RankFile& f : decoded.files) {
      if (f.snap->global_rank >= 0) report.ranks.push_back(f.snap->global_rank);
      const bool owner = f.snap->host == decoded.header.host;
      const auto [it, inserted] = seen.try_emplace(KeyOf(f), files.size(), owner);
      if (inserted) {
        files.push_back(std::move(f));
        continue;
      }
      ++duplicates;
      if (owner && !it->second.second) {
        files[it->second.first] = std::move(f);
        it->second.second = true;
      }
    }
    std::sort(report.ranks.begin(), report.ranks.end());
  }
  errors.insert(errors.begin(), job->source_errors.begin(), job->source_errors.end());
  if (duplicates > 0) {
    job->notes.push_back(std::to_string(duplicates) +
                         " rank(s) reached through more than one source were counted once (the "
                         "local file, else the digest of the node that wrote it)");
  }
  if (job->sources_ok == 0 && job->local_files == 0) return;
  // One job per index, as for a directory (trace/job_choice.h): another job's ranks would read as
  // dead members. Digests carry shifted times, so the newest heartbeat is judged on our clock.
  std::vector<const trace::RingInfo*> infos;
  infos.reserve(files.size());
  for (const hang_detector::RankFile& f : files) infos.push_back(f.snap.get());
  const trace::JobChoice choice = trace::ChooseJob(infos, job_id);
  if (choice.LeftOut() > 0) {
    job->notes.push_back(choice.Note());
    std::vector<hang_detector::RankFile> kept;
    for (size_t i = 0; i < files.size(); ++i) {
      if (choice.keep[i] != 0) kept.push_back(std::move(files[i]));
    }
    files = std::move(kept);
  }
  job->index = hang_detector::JobIndex::FromFiles(std::move(files), std::move(errors));
}

}  // namespace ncclscope::exporters
