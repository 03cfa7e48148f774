// The `comm` label: a communicator's name, with the number of distinct values bounded so a job
// that names a communicator per layer (or per step) cannot blow up the series count.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

namespace ncclscope::exporters {

inline constexpr size_t kMaxCommLabels = 16;
inline constexpr char kOtherComm[] = "other";
// Records on a communicator no comm table describes (created before the probe loaded, or dropped
// from a full table).
inline constexpr char kUnknownComm[] = "unknown";

// First come, first kept: the first kMaxCommLabels distinct names are their own label for the
// life of the exporter (a label never changes meaning between scrapes), later ones read "other".
// Not thread-safe.
class CommLabels {
 public:
  explicit CommLabels(size_t max_labels = kMaxCommLabels) : max_(max_labels) {}
  const std::string& Label(const std::string& name);

 private:
  size_t max_;
  size_t kept_ = 0;
  std::unordered_map<std::string, std::string> labels_;
  const std::string other_ = kOtherComm;
};

}  // namespace ncclscope::exporters
