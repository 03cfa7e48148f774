#include "exporters/ring_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "trace/ring_reader.h"

namespace ncclscope::exporters {

DirRingSource::~DirRingSource() {
  for (const auto& [name, m] : mapped_) Unmap(m);
}

void DirRingSource::Unmap(const Mapping& m) {
  munmap(m.base, m.size);
}

std::vector<std::string> DirRingSource::List(std::string* error) {
  std::vector<std::string> files = trace::ListRingFiles(dir_, error);
  if (!host_.empty()) {
    const std::string prefix = dir_ + "/" + host_ + "-";
    std::erase_if(files, [&prefix](const std::string& f) { return f.rfind(prefix, 0) != 0; });
  }
  // A removed file's pages go back to the system only once nobody maps it.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = mapped_.begin(); it != mapped_.end();) {
    if (std::binary_search(files.begin(), files.end(), it->first)) {
      ++it;
      continue;
    }
    Unmap(it->second);
    it = mapped_.erase(it);
  }
  return files;
}

const DirRingSource::Mapping* DirRingSource::MappingOf(const std::string& name) {
  struct stat st {};
  const bool present = stat(name.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const auto it = mapped_.find(name);
  if (it != mapped_.end()) {
    const Mapping& m = it->second;
    if (present && m.device == st.st_dev && m.inode == st.st_ino &&
        m.size == static_cast<size_t>(st.st_size)) {
      return &m;
    }
    Unmap(m);
    mapped_.erase(it);
  }
  if (!present || st.st_size <= 0) return nullptr;
  // stat said regular, but the entry can be swapped before open: a FIFO then must not block the
  // scrape (non-blocking), and the descriptor must be the file stat'ed (checked below).
  const int fd = open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return nullptr;
  struct stat opened {};
  const auto size = static_cast<size_t>(st.st_size);
  void* base = fstat(fd, &opened) == 0 && opened.st_ino == st.st_ino && opened.st_dev == st.st_dev
                   ? mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  return &(mapped_[name] = {st.st_dev, st.st_ino, size, base});
}

bool DirRingSource::Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
                          std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Mapping* m = MappingOf(name);
  if (m == nullptr) return trace::VisitRingFileFrom(name, first, visitor, error);
  return trace::VisitRingFrom(m->base, m->size, name, first, visitor, error);
}

}  // namespace ncclscope::exporters
