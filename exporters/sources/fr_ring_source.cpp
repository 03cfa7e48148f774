#include "exporters/sources/fr_ring_source.h"

#include <algorithm>

#include "trace/flight_recorder/fr_records.h"

namespace ncclscope::exporters {

std::vector<std::string> FrRingSource::List(std::string* error) {
  std::vector<flight_recorder::FrDumpListing> listings(dirs_.size());
  for (size_t i = 0; i < dirs_.size(); ++i) {
    if (!flight_recorder::ListFrDumps(dirs_[i], &listings[i], error)) return {};
  }
  std::vector<flight_recorder::FrDumpFile> dumps;
  std::vector<std::string> skipped;
  for (flight_recorder::FrDumpListing& listing : listings) {
    dumps.insert(dumps.end(), listing.dumps.begin(), listing.dumps.end());
    skipped.insert(skipped.end(), listing.skipped.begin(), listing.skipped.end());
  }
  // A rank dumped in two directories: as within one (ListFrDumps), the newer dump is read.
  std::stable_sort(dumps.begin(), dumps.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.mtime_ns > b.mtime_ns;
  });
  std::vector<std::string> paths;
  std::lock_guard<std::mutex> lock(mutex_);
  files_.clear();
  unreadable_.clear();
  // The newest dump of the whole job: each node's ranks dump when the first rank signals them.
  last_dump_ns_ = 0;
  for (flight_recorder::FrDumpFile& f : dumps) {
    if (!paths.empty() && files_.at(paths.back()).rank == f.rank) {
      skipped.push_back(f.path + ": a second dump of rank " + std::to_string(f.rank) +
                        "; the newer one is read (" + paths.back() + ")");
      continue;
    }
    paths.push_back(f.path);
    last_dump_ns_ = std::max(last_dump_ns_, f.mtime_ns);
    files_[f.path] = std::move(f);
  }
  skipped_ = std::move(skipped);
  return paths;
}

bool FrRingSource::Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
                         std::string* error) {
  flight_recorder::FrFileFacts facts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = files_.find(name);
    if (it == files_.end()) {
      *error = name + ": not a Flight Recorder dump listed";
      return false;
    }
    // A look at the header alone (trace::RingHeaderCollector) needs no second decode.
    if (const auto h = headers_.find(name); h != headers_.end() && first == UINT64_MAX) {
      visitor->BeginFile(h->second);
      visitor->EndFile(h->second);
      return true;
    }
    facts = {name, it->second.rank, last_dump_ns_};
  }
  flight_recorder::FrDump dump;
  if (!flight_recorder::ReadFrDumpFile(name, &dump, error)) {
    std::lock_guard<std::mutex> lock(mutex_);
    unreadable_[name] = facts.global_rank;
    return false;
  }
  flight_recorder::FrRecords converted = flight_recorder::RecordsFromFrDump(dump, facts);
  dump = {};
  visitor->BeginFile(converted.info);
  const auto& records = converted.records;
  const auto from = std::lower_bound(
      records.begin(), records.end(), first,
      [](const trace::StoredRecord& r, uint64_t index) { return r.index < index; });
  constexpr size_t kBatch = 256;
  for (auto it = from; it < records.end(); it += std::min<ptrdiff_t>(kBatch, records.end() - it)) {
    visitor->Records(&*it, static_cast<size_t>(std::min<ptrdiff_t>(kBatch, records.end() - it)));
  }
  visitor->EndFile(converted.info);
  std::lock_guard<std::mutex> lock(mutex_);
  unreadable_.erase(name);
  headers_[name] = std::move(converted.info);
  notes_[name] = std::move(converted.notes);
  return true;
}

std::vector<int> FrRingSource::UnreadableRanks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> ranks;
  for (const auto& [path, rank] : unreadable_) ranks.push_back(rank);
  return ranks;
}

bool FrRingSource::NamesOf(int rank, const std::vector<uint64_t>& indices,
                           std::vector<std::optional<EntryNames>>* out, std::string* error) const {
  out->assign(indices.size(), std::nullopt);
  flight_recorder::FrFileFacts facts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find_if(files_.begin(), files_.end(),
                                 [rank](const auto& f) { return f.second.rank == rank; });
    if (it == files_.end()) {
      *error = "no Flight Recorder dump of rank " + std::to_string(rank) + " in";
      for (const std::string& dir : dirs_) *error += " " + dir;
      return false;
    }
    facts = {it->first, rank, last_dump_ns_};
  }
  flight_recorder::FrDump dump;
  if (!flight_recorder::ReadFrDumpFile(facts.path, &dump, error)) return false;
  // The same conversion as Visit's, so the indices are the ones the analysis saw.
  const flight_recorder::FrRecords converted = flight_recorder::RecordsFromFrDump(dump, facts);
  const auto& records = converted.records;
  for (size_t i = 0; i < indices.size(); ++i) {
    const auto at = std::lower_bound(
        records.begin(), records.end(), indices[i],
        [](const trace::StoredRecord& r, uint64_t index) { return r.index < index; });
    if (at == records.end() || at->index != indices[i]) continue;
    const int32_t entry = converted.entry_of[static_cast<size_t>(at - records.begin())];
    if (entry < 0) continue;
    const flight_recorder::FrEntry& e = dump.entries[static_cast<size_t>(entry)];
    (*out)[i] = EntryNames{e.record_id, e.p2p_seq_id, e.is_p2p};
  }
  return true;
}

std::vector<std::string> FrRingSource::Notes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out = skipped_;
  // The same finding in many dumps is said once, with how many dumps showed it.
  std::map<std::string, std::pair<std::string, size_t>> by_line;
  for (const auto& [path, lines] : notes_) {
    for (const std::string& line : lines) {
      auto& [first_path, count] = by_line[line];
      if (count++ == 0) first_path = path;
    }
  }
  for (const auto& [line, where] : by_line) {
    out.push_back(
        where.first +
        (where.second > 1 ? " (and " + std::to_string(where.second - 1) + " more dumps)" : "") +
        ": " + line);
  }
  return out;
}

}  // namespace ncclscope::exporters
