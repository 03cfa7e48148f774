// One ring file as the timeline builder reads it (timeline_builder.cpp): its calls kept until the
// file's end, the device start markers and NVTX names that come after them, and where the
// verdicts name its rank. Shared by the builder and the rank writer (rank_writer.h). Not
// thread-safe; one FileRecords per file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hang_detector/verdicts/verdict.h"
#include "trace/record.h"
#include "trace/ring_visitor.h"

namespace ncclscope::exporters::timeline {

using trace::OpType;
using trace::RecordData;
using trace::RingInfo;
using trace::StoredRecord;

inline uint64_t Mix(uint64_t x) {  // splitmix64's finalizer: ids spread over 64 bits
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Where a verdict names this rank, and the record its evidence cites (if any).
struct Mark {
  const hang_detector::Verdict* verdict;
  std::optional<uint64_t> record_index;
};

// One ring file's records, kept until its end so that each operation's device start marker,
// which the probe writes after the call's record, is known when its slice is written.
class FileRecords final : public trace::RingVisitor {
 public:
  explicit FileRecords(const std::unordered_set<uint64_t>* wanted_indices)
      : wanted_indices_(wanted_indices) {}

  void BeginFile(const RingInfo& info) override {
    info_ = info;
    calls_.reserve(static_cast<size_t>(
        std::min<uint64_t>(info.write_pos - info.overwritten, info.record_capacity)));
  }
  void Records(const StoredRecord* batch, size_t n) override {
    for (size_t i = 0; i < n; ++i) Add(batch[i]);
  }
  void EndFile(const RingInfo& info) override { info_.torn_records = info.torn_records; }

  const RingInfo& info() const { return info_; }
  const std::vector<StoredRecord>& calls() const { return calls_; }
  // When the host saw the kernel of (comm, seq, peer-and-op key) start; nullopt: no marker.
  std::optional<int64_t> DeviceStart(uint64_t key) const {
    const auto it = device_starts_.find(key);
    if (it == device_starts_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<int64_t> TimeOfIndex(uint64_t index) const {
    const auto it = index_times_.find(index);
    if (it == index_times_.end()) return std::nullopt;
    return it->second;
  }
  const std::string& PhaseName(uint32_t context) const {
    static const std::string kNone;
    const auto it = phase_names_.find(context);
    return it == phase_names_.end() ? kNone : it->second;
  }
  int64_t last_ns() const { return last_ns_; }

  static uint64_t CollectiveKey(uint64_t comm, uint64_t seq) { return Mix(comm ^ Mix(seq)); }
  static uint64_t P2pKey(uint64_t comm, uint64_t seq, int peer, OpType op) {
    return Mix(comm ^ Mix(seq ^ Mix((static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 16) |
                                    static_cast<uint64_t>(op))));
  }

 private:
  void Add(const StoredRecord& r) {
    const RecordData& d = r.data;
    const auto op = static_cast<OpType>(d.op);
    last_ns_ = std::max({last_ns_, d.t_enter_ns, d.t_exit_ns, d.t_device_done_ns});
    if (wanted_indices_ != nullptr && wanted_indices_->count(r.index) != 0) {
      index_times_[r.index] = d.t_enter_ns;
    }
    if (op == OpType::kDeviceStart && d.seq != 0) {
      Earliest(CollectiveKey(d.comm_id, d.seq), d.t_enter_ns);
    } else if (op == OpType::kP2pDeviceStart && d.seq != 0) {
      Earliest(P2pKey(d.comm_id, d.seq, d.peer, static_cast<OpType>(d.redop)), d.t_enter_ns);
    } else if (op == OpType::kNvtxPhaseName) {
      const char* name = reinterpret_cast<const char*>(&d.group_id);
      phase_names_[static_cast<uint32_t>(d.seq)] =
          std::string(name, strnlen(name, trace::kNvtxNameBytes));
    } else if (!trace::IsProbeWritten(op)) {  // a call: the probe's own records get no slice
      calls_.push_back(r);
    }
  }
  void Earliest(uint64_t key, int64_t t) {
    auto [it, fresh] = device_starts_.emplace(key, t);
    if (!fresh) it->second = std::min(it->second, t);
  }

  const std::unordered_set<uint64_t>* wanted_indices_;
  RingInfo info_;
  std::vector<StoredRecord> calls_;
  std::unordered_map<uint64_t, int64_t> device_starts_;
  std::unordered_map<uint64_t, int64_t> index_times_;
  std::unordered_map<uint32_t, std::string> phase_names_;
  int64_t last_ns_ = INT64_MIN;
};

struct FileEntry {
  std::string name;
  RingInfo info;  // header and comm table
  int64_t wall_offset = 0;
};

inline int64_t WallOffset(const RingInfo& info) {
  return info.start_realtime_ns - info.start_monotonic_ns;
}

// A communicator matches --comm by its name or by 4+ leading hex digits of its id. Pure.
bool CommMatches(const trace::CommInfo& c, const std::string& wanted);

}  // namespace ncclscope::exporters::timeline
