// What the exporter takes from the records' NVTX contexts (trace/record.h, "NVTX context";
// docs/nvtx.md): time in operations per phase (forward, backward, optimizer, ...) and each rank's
// newest step. The step is a gauge, never a label (it grows without bound); the phase is a label
// with a bounded number of values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/nvtx_names.h"
#include "trace/record.h"

namespace ncclscope::exporters {

// A job has a handful of phases; the cap guards against a program whose range right inside the
// step is named per layer or per micro-batch.
inline constexpr size_t kMaxPhaseLabels = 8;
inline constexpr char kPhaseNone[] = "none";        // called outside any phase
inline constexpr char kPhaseUnknown[] = "unknown";  // a context whose names the exporter never read
inline constexpr char kPhaseOther[] = "other";      // a phase past the cap

// The `phase` label: the first kMaxPhaseLabels distinct phase names are their own label for the
// life of the exporter (a label never changes meaning between scrapes), later ones read "other";
// "none", "unknown" and "other" are always there besides. Names are made valid UTF-8. Not
// thread-safe.
class PhaseLabels {
 public:
  static constexpr uint16_t kNone = 0;
  static constexpr uint16_t kUnknown = 1;
  static constexpr uint16_t kOther = 2;

  explicit PhaseLabels(size_t max_labels = kMaxPhaseLabels);
  // The label of a phase name ("" is none).
  uint16_t Index(const std::string& phase);
  const std::string& Label(uint16_t index) const { return labels_[index]; }

 private:
  size_t max_;
  std::vector<std::string> labels_;  // by index: none, unknown, other, then the names kept
  std::unordered_map<std::string, uint16_t> index_;
};

// One ring file's contexts: the names its name records gave, the label each context id reads as
// once its names are known, and the newest step its operations were called in. Not thread-safe.
class FileNvtx {
 public:
  FileNvtx() { label_.fill(kUnresolved); }
  void Reset();
  // A name record (nvtx_phase_name / nvtx_range_name).
  void Name(const trace::RecordData& record);
  // An operation's reserved word, in writer order.
  void Issued(uint32_t reserved);
  // The phase label of an operation's context. A context whose names have not been read reads
  // "unknown" and is looked up again next time (the probe writes its names again later on).
  uint16_t PhaseOf(uint32_t reserved, PhaseLabels* labels);

  // Whether any operation of the file carried a context: without, the file has no phase series.
  bool has_context() const { return has_context_; }
  std::optional<uint64_t> step() const { return step_; }

 private:
  static constexpr uint16_t kUnresolved = 0xFFFF;
  trace::NvtxNames names_;
  std::array<uint16_t, 256> label_{};    // by context id
  std::array<bool, 256> phase_named_{};  // its nvtx_phase_name record was read
  bool has_context_ = false;
  std::optional<uint64_t> step_;
};

// value with every byte that is not part of valid UTF-8 replaced by U+FFFD: Prometheus refuses a
// scrape whose label values are not UTF-8, and the probe cuts names at 47 bytes, possibly inside
// a character. Pure.
std::string ValidUtf8(std::string_view value);

}  // namespace ncclscope::exporters
