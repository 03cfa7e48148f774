#include "exporters/multinode/digest_job.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>

#include "exporters/multinode/digest_codec.h"
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
  LocalFiles local;
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
        local.files.push_back(std::move(f));
      } else {
        local.errors.push_back(why);
      }
    }
    local.facts.label = "ring files of " + options.local_dir;
  }
  const std::vector<FetchedDigest> fetched = FetchDigests(sources, options.fetch);
  AssembleFetchedJob(std::move(local), fetched, options.job, options.fetch.max_bytes, job);
  return true;
}

void AssembleFetchedJob(LocalFiles local, const std::vector<FetchedDigest>& fetched,
                        const std::string& job_id, size_t max_bytes, DigestJob* job) {
  *job = {};
  job->local_files = local.files.size();
  std::vector<std::string> errors = std::move(local.errors);
  // Source 0 is this node's ring files, source k + 1 the k-th digest.
  std::vector<SourceFacts> facts(1 + fetched.size());
  facts[0] = std::move(local.facts);
  facts[0].local = true;
  if (facts[0].ranks.empty()) {
    for (const hang_detector::RankFile& f : local.files) {
      if (f.rank >= 0) facts[0].ranks.push_back(f.rank);
    }
    std::sort(facts[0].ranks.begin(), facts[0].ranks.end());
    facts[0].ranks.erase(std::unique(facts[0].ranks.begin(), facts[0].ranks.end()),
                         facts[0].ranks.end());
  }
  // One entry per writer process, wherever it was reached, and whether the copy kept is the best
  // there is: a local ring file, or the digest of the node that wrote it (which checked its
  // process and read its ring first hand; another node sharing the directory sees it late).
  struct Copy {
    hang_detector::RankFile file;
    bool first_hand = false;
    std::vector<uint32_t> sources;
  };
  std::vector<Copy> copies;
  std::map<WriterKey, size_t> seen;
  for (hang_detector::RankFile& f : local.files) {
    seen.try_emplace(KeyOf(f), copies.size());
    copies.push_back({std::move(f), true, {0}});
  }

  job->sources = fetched.size();
  uint64_t duplicates = 0;
  DigestBounds bounds;
  bounds.max_bytes = max_bytes;
  for (size_t k = 0; k < fetched.size(); ++k) {
    const FetchedDigest& d = fetched[k];
    const auto source = static_cast<uint32_t>(k + 1);
    DecodedDigest decoded;
    std::string why;
    SourceReport& report = job->per_source.emplace_back();
    report.source = d.source;
    report.round_trip_s = d.round_trip_s;
    facts[source].label = d.source;
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
    report.instance = decoded.header.instance;
    ++job->sources_ok;
    job->max_round_trip_s = std::max(job->max_round_trip_s, d.round_trip_s);
    for (const std::string& line : decoded.header.unreadable) {
      errors.push_back(decoded.header.host + " (" + d.source + "): " + line);
    }
    for (hang_detector::RankFile& f : decoded.files) {
      if (f.snap->global_rank >= 0) report.ranks.push_back(f.snap->global_rank);
      const bool owner = f.snap->host == decoded.header.host;
      const auto [it, inserted] = seen.try_emplace(KeyOf(f), copies.size());
      if (inserted) {
        copies.push_back({std::move(f), owner, {source}});
        continue;
      }
      ++duplicates;
      Copy& c = copies[it->second];
      if (c.sources.back() != source) c.sources.push_back(source);
      if (owner && !c.first_hand) {
        c.file = std::move(f);
        c.first_hand = true;
      }
    }
    std::sort(report.ranks.begin(), report.ranks.end());
    report.ranks.erase(std::unique(report.ranks.begin(), report.ranks.end()), report.ranks.end());
    facts[source].host = report.host;
    facts[source].instance = report.instance;
    facts[source].ranks = report.ranks;
  }
  errors.insert(errors.begin(), job->source_errors.begin(), job->source_errors.end());
  if (duplicates > 0) {
    job->notes.push_back(std::to_string(duplicates) +
                         " rank(s) reached through more than one source were counted once (the "
                         "local file, else the digest of the node that wrote it)");
  }
  job->problems = FindHostClashes(facts);
  if (job->sources_ok == 0 && job->local_files == 0) return;
  // One job per index, as for a directory (trace/job_choice.h): another job's ranks would read as
  // dead members. Digests carry shifted times, so the newest heartbeat is judged on our clock.
  std::vector<const trace::RingInfo*> infos;
  infos.reserve(copies.size());
  for (const Copy& c : copies) infos.push_back(c.file.snap.get());
  const trace::JobChoice choice = trace::ChooseJob(infos, job_id);
  if (choice.LeftOut() > 0) job->notes.push_back(choice.Note());
  // Then one source per rank (ranks of another job are no clash).
  std::vector<Copy> kept;
  std::vector<WriterClaim> claims;
  for (size_t i = 0; i < copies.size(); ++i) {
    if (choice.keep[i] == 0) continue;
    claims.push_back({copies[i].file.rank, copies[i].file.heartbeat_wall, copies[i].sources});
    kept.push_back(std::move(copies[i]));
  }
  RankClashes clashes = ResolveRankClashes(facts, claims);
  std::move(clashes.problems.begin(), clashes.problems.end(), std::back_inserter(job->problems));
  std::vector<hang_detector::RankFile> files;
  files.reserve(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    if (clashes.keep[i] != 0) files.push_back(std::move(kept[i].file));
  }
  std::vector<std::string> notes;
  for (const SourceProblem& p : job->problems) notes.push_back(p.line);
  job->index =
      hang_detector::JobIndex::FromFiles(std::move(files), std::move(errors), std::move(notes));
}

}  // namespace ncclscope::exporters
