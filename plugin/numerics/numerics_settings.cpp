#include "plugin/numerics/numerics_settings.h"

namespace ncclscope::plugin {
namespace {

using trace::OpType;

constexpr OpType kCollectives[] = {OpType::kAllReduce, OpType::kBroadcast,     OpType::kReduce,
                                   OpType::kAllGather, OpType::kReduceScatter, OpType::kAlltoAll,
                                   OpType::kGather,    OpType::kScatter};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (const char c : text + ",") {
    if (c != ',') {
      if (c != ' ') item += c;
      continue;
    }
    if (!item.empty()) out.push_back(item);
    item.clear();
  }
  return out;
}

uint32_t OpBit(OpType op) {
  return 1u << static_cast<uint32_t>(op);
}

// The id an entry names when it is hexadecimal (with or without 0x, leading zeros or not).
bool HexId(const std::string& text, uint64_t* id) {
  const size_t start = text.rfind("0x", 0) == 0 ? 2 : 0;
  if (text.size() <= start || text.size() - start > 16) return false;
  uint64_t value = 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return false;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  *id = value;
  return true;
}

}  // namespace

bool NumericsSettings::SamplesComm(const std::string& name, uint64_t id) const {
  if (comms.empty()) return true;
  for (const std::string& c : comms) {
    uint64_t named = 0;
    if (c == name || (HexId(c, &named) && named == id)) return true;
  }
  return false;
}

NumericsSettings ParseNumericsSettings(const std::string& mode, int64_t every,
                                       const std::string& ops, const std::string& comms,
                                       std::vector<std::string>* warnings) {
  NumericsSettings s;
  s.scan = mode == "nan" || mode == "all";
  s.hash = mode == "checksum" || mode == "all";
  s.every = every > 0 ? static_cast<uint64_t>(every) : 1;
  s.comms = SplitList(comms);
  const std::vector<std::string> names = SplitList(ops);
  if (names.empty()) {
    for (const OpType op : kCollectives) s.op_mask |= OpBit(op);
    return s;
  }
  for (const std::string& n : names) {
    bool known = false;
    for (const OpType op : kCollectives) {
      if (n == trace::OpTypeName(op)) {
        s.op_mask |= OpBit(op);
        known = true;
      }
    }
    if (!known) {
      warnings->push_back("NCCLSCOPE_NUMERICS_OPS: '" + n +
                          "' is not a collective (allreduce, broadcast, reduce, allgather, "
                          "reducescatter, alltoall, gather, scatter); ignored");
    }
  }
  return s;
}

}  // namespace ncclscope::plugin
