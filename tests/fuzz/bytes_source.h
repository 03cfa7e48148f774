// A RingSource of one ring file held in a fuzzer's buffer, for targets that read rings the way
// the exporter, `stats` and `timeline` do. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"

namespace ncclscope::testing {

class BytesSource final : public exporters::RingSource {
 public:
  BytesSource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  std::vector<std::string> List(std::string*) override { return {"fuzz.ring"}; }
  bool Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
             std::string* error) override {
    return trace::VisitRingFrom(data_, size_, name, first, visitor, error);
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace ncclscope::testing
