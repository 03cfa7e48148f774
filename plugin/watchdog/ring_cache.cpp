#include "plugin/watchdog/ring_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "trace/job_choice.h"
#include "trace/ring_reader.h"

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

bool SameComm(const trace::CommInfo& a, const trace::CommInfo& b) {
  return a.id == b.id && a.parent_id == b.parent_id && a.origin == b.origin && a.rank == b.rank &&
         a.nranks == b.nranks && a.color == b.color && a.key == b.key &&
         a.split_index == b.split_index && a.cuda_device == b.cuda_device &&
         a.created_monotonic_ns == b.created_monotonic_ns && a.handle == b.handle &&
         a.name == b.name && a.pending == b.pending;
}

// Everything of a header the compacted file depends on, i.e. all but the heartbeat, the flags and
// the torn count (which a reader makes, not the writer).
bool SameContent(const trace::RingInfo& a, const trace::RingInfo& b) {
  if (a.format_version != b.format_version || a.pid != b.pid || a.global_rank != b.global_rank ||
      a.local_rank != b.local_rank || a.world_size != b.world_size || a.host != b.host ||
      a.job_id != b.job_id || a.gpu_uuid != b.gpu_uuid ||
      a.start_realtime_ns != b.start_realtime_ns || a.start_monotonic_ns != b.start_monotonic_ns ||
      a.nccl_version != b.nccl_version || a.record_capacity != b.record_capacity ||
      a.write_pos != b.write_pos || a.overwritten != b.overwritten ||
      a.dropped_records != b.dropped_records || a.dropped_comms != b.dropped_comms ||
      a.untracked_completions != b.untracked_completions ||
      a.unknown_comm_records != b.unknown_comm_records || a.comms.size() != b.comms.size()) {
    return false;
  }
  for (size_t i = 0; i < a.comms.size(); ++i) {
    if (!SameComm(a.comms[i], b.comms[i])) return false;
  }
  return true;
}

bool SameRecord(const trace::RecordData& a, const trace::RecordData& b) {
  return a.t_enter_ns == b.t_enter_ns && a.t_exit_ns == b.t_exit_ns &&
         a.t_device_done_ns == b.t_device_done_ns && a.seq == b.seq && a.group_id == b.group_id &&
         a.flags == b.flags && a.comm_id == b.comm_id && a.op == b.op && a.dtype == b.dtype &&
         a.redop == b.redop && a.peer == b.peer && a.result == b.result && a.stream == b.stream;
}

// A record that the writer may still rewrite: its device completion is pending, or the call it
// records has not returned (CloseCall rewrites it).
bool MayChange(const hd::RankFile& f, uint32_t pos) {
  return trace::IsPending(f.ops[pos].t_device_done_ns) ||
         f.ShapeAt(pos).result == trace::kResultInCall;
}

uint32_t FirstUnsettled(const hd::RankFile& f) {
  for (uint32_t p = 0; p < f.size(); ++p) {
    if (MayChange(f, p)) return p;
  }
  return f.size();
}

// Feeds a RankFileBuilder, or only the header when the file is another job's.
class JobFilter final : public trace::RingVisitor {
 public:
  JobFilter(hd::RankFile* out, const std::string& job) : builder_(out), job_(job) {}
  void BeginFile(const trace::RingInfo& info) override {
    foreign_ = !job_.empty() && info.job_id != job_;
    builder_.BeginFile(info);
  }
  void Records(const trace::StoredRecord* batch, size_t n) override {
    if (!foreign_) builder_.Records(batch, n);
  }
  void EndFile(const trace::RingInfo& info) override { builder_.EndFile(info); }
  bool foreign() const { return foreign_; }

 private:
  hd::RankFileBuilder builder_;
  const std::string& job_;
  bool foreign_ = false;
};

// Compares what a file holds now with its cached copy, from position `from` on.
class Checker final : public trace::RingVisitor {
 public:
  Checker(const hd::RankFile& cached, uint32_t from) : cached_(cached), pos_(from) {}
  void BeginFile(const trace::RingInfo& info) override {
    match_ = SameContent(info, *cached_.snap);
    heartbeat_ = info.heartbeat_monotonic_ns;
    flags_ = info.flags;
  }
  void Records(const trace::StoredRecord* batch, size_t n) override {
    for (size_t i = 0; i < n && match_; ++i, ++pos_) {
      match_ = pos_ < cached_.size() && cached_.IndexOf(pos_) == batch[i].index &&
               SameRecord(batch[i].data, cached_.At(pos_));
    }
  }
  void EndFile(const trace::RingInfo& info) override {
    // A slot torn now, or a record the copy has and the file no longer shows.
    match_ = match_ && info.torn_records == 0 && pos_ == cached_.size();
  }
  bool match() const { return match_; }
  int64_t heartbeat() const { return heartbeat_; }
  uint32_t flags() const { return flags_; }

 private:
  const hd::RankFile& cached_;
  uint32_t pos_;
  bool match_ = false;
  int64_t heartbeat_ = 0;
  uint32_t flags_ = 0;
};

}  // namespace

bool RingCache::ReadWhole(const std::string& path, const std::string& job, Entry* e,
                          std::string* error) {
  JobFilter filter(&e->file, job);
  if (!trace::VisitRingFile(path, &filter, error)) return false;
  e->foreign = filter.foreign();
  e->first_unsettled = FirstUnsettled(e->file);
  ++last_.files_read;
  last_.records_read += e->file.size();
  return true;
}

bool RingCache::Refresh(const std::string& path, Entry* e) {
  hd::RankFile& f = e->file;
  // Slots skipped as torn may hold whole records now, before the first unsettled one too.
  if (f.snap == nullptr || f.snap->torn_records != 0) return false;
  const uint64_t first =
      e->first_unsettled < f.size() ? f.IndexOf(e->first_unsettled) : f.snap->write_pos;
  Checker check(f, e->first_unsettled);
  std::string ignored;
  if (!trace::VisitRingFileFrom(path, first, &check, &ignored) || !check.match()) return false;
  auto info = std::make_shared<trace::RingInfo>(*f.snap);
  info->heartbeat_monotonic_ns = check.heartbeat();
  info->flags = check.flags();
  f.heartbeat_wall = f.Wall(info->heartbeat_monotonic_ns);
  f.snap = std::move(info);
  ++last_.files_reused;
  return true;
}

std::optional<hd::JobIndex> RingCache::Index(const std::string& dir, const std::string& job,
                                             std::vector<std::string>* notes, std::string* error) {
  last_ = {};
  std::string list_error;
  const std::vector<std::string> paths = trace::ListRingFiles(dir, &list_error);
  if (!list_error.empty()) {
    *error = list_error;
    return std::nullopt;
  }
  for (auto& [path, e] : entries_) e.seen = false;
  std::vector<std::string> errors;
  for (const std::string& path : paths) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      errors.push_back(path + ": " + std::strerror(errno));
      entries_.erase(path);
      continue;
    }
    auto it = entries_.find(path);
    if (it != entries_.end() && it->second.dev == st.st_dev && it->second.ino == st.st_ino &&
        Refresh(path, &it->second)) {
      it->second.seen = true;
      continue;
    }
    Entry fresh;
    fresh.dev = st.st_dev;
    fresh.ino = st.st_ino;
    std::string read_error;
    if (!ReadWhole(path, job, &fresh, &read_error)) {
      errors.push_back(std::move(read_error));
      entries_.erase(path);
      continue;
    }
    fresh.seen = true;
    entries_[path] = std::move(fresh);
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->second.seen ? std::next(it) : entries_.erase(it);
  }
  std::vector<const trace::RingInfo*> infos;
  infos.reserve(entries_.size());
  for (const auto& [path, e] : entries_) infos.push_back(e.file.snap.get());
  const trace::JobChoice choice = trace::ChooseJob(infos, job);
  if (choice.LeftOut() > 0) notes->push_back(choice.Note());
  saw_other_jobs_ = choice.ignored_files > 0;
  // The index takes copies: the cache keeps its files for the next look.
  std::vector<hd::RankFile> files;
  files.reserve(entries_.size());
  size_t i = 0;
  for (const auto& [path, e] : entries_) {
    if (choice.keep[i++] != 0 && !e.foreign) files.push_back(e.file);
  }
  return hd::JobIndex::FromFiles(std::move(files), std::move(errors));
}

}  // namespace ncclscope::plugin
