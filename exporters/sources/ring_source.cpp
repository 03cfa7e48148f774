#include "exporters/sources/ring_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iostream>

#include "trace/job_choice.h"
#include "trace/ring_reader.h"

namespace ncclscope::exporters {

DirRingSource::~DirRingSource() {
  for (const auto& [name, m] : mapped_) Unmap(m);
}

void DirRingSource::Unmap(const Mapping& m) {
  munmap(m.base, m.size);
}

std::vector<std::string> DirRingSource::List(std::string* error) {
  std::vector<std::string> files;
  for (const std::string& dir : dirs_) {
    std::vector<std::string> listed = trace::ListRingFiles(dir, error);
    if (!host_.empty()) {
      const std::string prefix = dir + "/" + host_ + "-";
      std::erase_if(listed, [&prefix](const std::string& f) { return f.rfind(prefix, 0) != 0; });
    }
    files.insert(files.end(), listed.begin(), listed.end());
  }
  std::sort(files.begin(), files.end());  // searched below
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
  // After the unmapping: another job's files stay mapped, so each scrape reads their headers
  // without mapping them anew.
  KeepOneJob(&files);
  if (!keep_mapped_) {  // the headers are read: nothing stays mapped between visits
    for (const auto& [name, m] : mapped_) Unmap(m);
    mapped_.clear();
  }
  return files;
}

void DirRingSource::KeepOneJob(std::vector<std::string>* files) {
  // A file whose header cannot be read yet stays listed: the aggregator counts and reports it as
  // it does for any unreadable file.
  std::vector<trace::RingInfo> headers(files->size());
  std::vector<const trace::RingInfo*> readable;
  std::vector<size_t> at;
  for (size_t i = 0; i < files->size(); ++i) {
    const Mapping* m = MappingOf((*files)[i]);
    std::string ignored;
    trace::RingHeaderCollector visitor(&headers[i]);
    if (m == nullptr ||
        !trace::VisitRingFrom(m->base, m->size, (*files)[i], UINT64_MAX, &visitor, &ignored)) {
      continue;
    }
    readable.push_back(&headers[i]);
    at.push_back(i);
  }
  const trace::JobChoice choice = trace::ChooseJob(readable, job_);
  const std::string note = choice.Note();
  if (note != said_) {
    if (!note.empty()) {
      std::cerr << "ncclscope exporter: " << dirs_.front()
                << (dirs_.size() > 1 ? " (and " + std::to_string(dirs_.size() - 1) + " more)" : "")
                << ": " << note << std::endl;
    }
    said_ = note;
  }
  if (choice.LeftOut() == 0) return;
  std::vector<char> drop(files->size(), 0);
  for (size_t k = 0; k < at.size(); ++k) drop[at[k]] = choice.keep[k] == 0 ? 1 : 0;
  size_t kept = 0;
  for (size_t i = 0; i < files->size(); ++i) {
    if (drop[i] != 0) continue;
    if (kept != i) (*files)[kept] = std::move((*files)[i]);  // never onto itself
    ++kept;
  }
  files->resize(kept);
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
  if (!keep_mapped_) return trace::VisitRingFileFrom(name, first, visitor, error);
  std::lock_guard<std::mutex> lock(mutex_);
  const Mapping* m = MappingOf(name);
  if (m == nullptr) return trace::VisitRingFileFrom(name, first, visitor, error);
  return trace::VisitRingFrom(m->base, m->size, name, first, visitor, error);
}

}  // namespace ncclscope::exporters
