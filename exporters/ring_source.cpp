#include "exporters/ring_source.h"

#include "trace/ring_reader.h"

namespace ncclscope::exporters {

std::vector<std::string> DirRingSource::List(std::string* error) {
  std::vector<std::string> files = trace::ListRingFiles(dir_, error);
  if (host_.empty()) return files;
  const std::string prefix = dir_ + "/" + host_ + "-";
  std::erase_if(files, [&prefix](const std::string& f) { return f.rfind(prefix, 0) != 0; });
  return files;
}

bool DirRingSource::Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
                          std::string* error) {
  return trace::VisitRingFileFrom(name, first, visitor, error);
}

}  // namespace ncclscope::exporters
