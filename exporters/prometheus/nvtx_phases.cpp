#include "exporters/prometheus/nvtx_phases.h"

namespace ncclscope::exporters {
namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when there is none (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF).
size_t Utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;  // overlong
    if (b == 0xED) hi = 0x9F;  // surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;  // overlong
    if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string ValidUtf8(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    const size_t n = Utf8Length(value, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(value.substr(i, n));
      i += n;
    }
  }
  return out;
}

PhaseLabels::PhaseLabels(size_t max_labels)
    : max_(max_labels), labels_{kPhaseNone, kPhaseUnknown, kPhaseOther} {
  // A program's phase named like one of these is that label: no second series of the same name.
  for (size_t i = 0; i < labels_.size(); ++i) {
    index_.emplace(labels_[i], static_cast<uint16_t>(i));
  }
}

uint16_t PhaseLabels::Index(const std::string& phase) {
  if (phase.empty()) return kNone;
  const auto it = index_.find(phase);
  if (it != index_.end()) return it->second;
  const std::string label = ValidUtf8(phase);
  const auto valid = index_.find(label);  // another name that reads the same once made valid
  if (valid != index_.end()) return index_.emplace(phase, valid->second).first->second;
  if (labels_.size() - 3 >= max_) return index_.emplace(phase, kOther).first->second;
  const auto index = static_cast<uint16_t>(labels_.size());
  labels_.push_back(label);
  index_.emplace(label, index);
  return index_.emplace(phase, index).first->second;
}

void FileNvtx::Reset() {
  names_ = {};
  label_.fill(kUnresolved);
  phase_named_ = {};
  has_context_ = false;
  step_.reset();
}

void FileNvtx::Name(const trace::RecordData& record) {
  names_.Add(record);
  if (static_cast<trace::OpType>(record.op) == trace::OpType::kNvtxPhaseName &&
      record.seq < phase_named_.size()) {
    phase_named_[record.seq] = true;
  }
}

void FileNvtx::Issued(uint32_t reserved) {
  if (reserved == 0) return;
  has_context_ = true;
  if (trace::NvtxHasStep(reserved)) step_ = trace::NvtxStep(reserved);
}

uint16_t FileNvtx::PhaseOf(uint32_t reserved, PhaseLabels* labels) {
  const uint32_t id = trace::NvtxContextId(reserved);
  if (id == 0) return PhaseLabels::kNone;
  // More than 254 contexts in the process: this one's names were never written.
  if (id == trace::kNvtxContextFull) return PhaseLabels::kUnknown;
  uint16_t& label = label_[id];
  if (label != kUnresolved) return label;
  // Its phase record, not only its range's: the phase of a context may be "" (none).
  std::string phase;
  std::string range;
  if (!phase_named_[id] || !names_.NamesOf(id, &phase, &range)) return PhaseLabels::kUnknown;
  // An interned context's names never change within a process: its label is settled.
  label = labels->Index(phase);
  return label;
}

}  // namespace ncclscope::exporters
