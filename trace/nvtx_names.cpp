#include "trace/nvtx_names.h"

#include <cstring>

namespace ncclscope::trace {

bool NvtxNames::IsNameRecord(const RecordData& r) {
  const auto op = static_cast<OpType>(r.op);
  return op == OpType::kNvtxPhaseName || op == OpType::kNvtxRangeName;
}

void NvtxNames::Add(const RecordData& r) {
  if (!IsNameRecord(r) || r.seq == 0 || r.seq >= kNvtxContextFull) return;
  char name[kNvtxNameBytes + 1] = {};
  std::memcpy(name, reinterpret_cast<const char*>(&r.group_id), kNvtxNameBytes);
  auto& table = static_cast<OpType>(r.op) == OpType::kNvtxPhaseName ? phase_ : range_;
  table[static_cast<uint32_t>(r.seq)] = name;  // stops at the first NUL; never past byte 48
}

bool NvtxNames::NamesOf(uint32_t id, std::string* phase, std::string* range) const {
  const auto p = phase_.find(id);
  const auto r = range_.find(id);
  *phase = p == phase_.end() ? std::string() : p->second;
  *range = r == range_.end() ? std::string() : r->second;
  return p != phase_.end() || r != range_.end();
}

NvtxWhere NvtxNames::Of(uint32_t reserved) const {
  NvtxWhere w;
  w.has_step = NvtxHasStep(reserved);
  if (w.has_step) w.step = NvtxStep(reserved);
  const uint32_t id = NvtxContextId(reserved);
  if (id == 0) return w;
  if (id == kNvtxContextFull) {
    w.range = "(more than 254 contexts)";
    return w;
  }
  const auto p = phase_.find(id);
  const auto r = range_.find(id);
  if (p == phase_.end() && r == range_.end()) {
    w.range = "#" + std::to_string(id);  // its name records were overwritten
    return w;
  }
  if (p != phase_.end()) w.phase = p->second;
  if (r != range_.end()) w.range = r->second;
  return w;
}

std::string NvtxWhereText(const NvtxWhere& w) {
  std::string out;
  if (w.has_step) out = "step " + std::to_string(w.step);
  if (!w.phase.empty()) out += (out.empty() ? "" : ", ") + w.phase;
  if (!w.range.empty() && w.range != w.phase) {
    out += out.empty() ? w.range : " (innermost: " + w.range + ")";
  }
  return out;
}

}  // namespace ncclscope::trace
