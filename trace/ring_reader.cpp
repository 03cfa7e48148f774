#include "trace/ring_reader.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ncclscope::trace {
namespace {

// The visitor that keeps everything: header, comm table and a copy of every record.
class SnapshotCollector final : public RingVisitor {
 public:
  explicit SnapshotCollector(RingSnapshot* out) : out_(out) {}
  void BeginFile(const RingInfo& info) override {
    static_cast<RingInfo&>(*out_) = info;
    out_->records.reserve(info.write_pos - info.overwritten);
  }
  void Records(const StoredRecord* batch, size_t n) override {
    out_->records.insert(out_->records.end(), batch, batch + n);
  }
  void EndFile(const RingInfo& info) override { out_->torn_records = info.torn_records; }

 private:
  RingSnapshot* out_;
};

}  // namespace

std::optional<RingSnapshot> ParseRing(const void* data, size_t size, const std::string& name,
                                      std::string* error) {
  RingSnapshot s;
  SnapshotCollector collector(&s);
  if (!VisitRing(data, size, name, &collector, error)) return std::nullopt;
  return s;
}

std::optional<RingSnapshot> ReadRingFile(const std::string& path, std::string* error) {
  RingSnapshot s;
  SnapshotCollector collector(&s);
  if (!VisitRingFile(path, &collector, error)) return std::nullopt;
  return s;
}

std::vector<std::string> ListRingFiles(const std::string& dir, std::string* error) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    *error = dir + ": cannot read directory: " + std::strerror(errno);
    return files;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".ring") == 0) {
      files.push_back(dir + "/" + name);
    }
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ncclscope::trace
