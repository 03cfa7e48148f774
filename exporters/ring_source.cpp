#include "exporters/ring_source.h"

#include "trace/ring_reader.h"

namespace ncclscope::exporters {

std::vector<std::string> DirRingSource::List(std::string* error) {
  return trace::ListRingFiles(dir_, error);
}

bool DirRingSource::Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
                          std::string* error) {
  return trace::VisitRingFileFrom(name, first, visitor, error);
}

}  // namespace ncclscope::exporters
