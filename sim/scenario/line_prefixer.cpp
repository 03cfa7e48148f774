#include "sim/scenario/line_prefixer.h"

namespace ncclscope::sim {

void LinePrefixer::feed(std::string_view bytes) {
  size_t start = 0;
  for (size_t nl = bytes.find('\n'); nl != std::string_view::npos; nl = bytes.find('\n', start)) {
    *out_ << prefix_ << partial_ << bytes.substr(start, nl - start) << '\n';
    partial_.clear();
    start = nl + 1;
  }
  partial_.append(bytes.substr(start));
  out_->flush();
}

void LinePrefixer::finish() {
  if (partial_.empty()) return;
  *out_ << prefix_ << partial_ << '\n';
  partial_.clear();
  out_->flush();
}

}  // namespace ncclscope::sim
