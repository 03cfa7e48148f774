#include "tests/hang_detector/nvtx_records.h"

#include <algorithm>
#include <cstring>

namespace ncclscope::testing {
namespace {

trace::RecordData NameRecord(trace::OpType op, uint32_t id, const std::string& name, int64_t t) {
  trace::RecordData r{};
  r.op = static_cast<uint32_t>(op);
  r.seq = id;
  std::memcpy(reinterpret_cast<char*>(&r.group_id), name.data(),
              std::min(name.size(), trace::kNvtxNameBytes - 1));
  r.dtype = r.redop = r.peer = -1;
  r.t_enter_ns = r.t_exit_ns = t;
  r.t_device_done_ns = trace::kDoneUntracked;
  return r;
}

}  // namespace

void AddNameRecords(trace::TraceSet* set, const std::vector<NvtxContextName>& names) {
  for (trace::RingSnapshot& s : set->files) {
    if (s.records.empty()) continue;
    const int64_t t = s.records.front().data.t_enter_ns;
    std::vector<trace::StoredRecord> out;
    for (const NvtxContextName& n : names) {
      out.push_back({0, NameRecord(trace::OpType::kNvtxPhaseName, n.id, n.phase, t)});
      out.push_back({0, NameRecord(trace::OpType::kNvtxRangeName, n.id, n.range, t)});
    }
    out.insert(out.end(), s.records.begin(), s.records.end());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].index = i;
      // A pending record names its own slot.
      if (trace::IsPending(out[i].data.t_device_done_ns)) {
        out[i].data.t_device_done_ns = trace::PendingMarker(i);
      }
    }
    s.records = std::move(out);
    s.write_pos = s.records.size();
  }
}

}  // namespace ncclscope::testing
