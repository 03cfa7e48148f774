#include "exporters/measures/size_classes.h"

namespace ncclscope::exporters {

size_t SizeClassOf(uint64_t bytes) {
  constexpr uint64_t kFirstBound = uint64_t{64} << 10;
  size_t k = 0;
  for (uint64_t bound = kFirstBound; k + 1 < kSizeClassCount && bytes > bound; bound *= 16) ++k;
  return k;
}

}  // namespace ncclscope::exporters
