#include "exporters/stats/cost_table.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "exporters/measures/arrival_lateness.h"
#include "exporters/measures/operation_size.h"
#include "exporters/measures/size_classes.h"
#include "exporters/sources/file_tail.h"
#include "trace/clock.h"
#include "trace/nccl_names.h"

namespace ncclscope::exporters {
namespace {

constexpr double kBytesPerGB = 1e9;  // nccl-tests' GB/s

using RowKey = std::tuple<uint64_t, uint32_t, size_t>;  // comm, op, size class

struct RowAcc {
  std::vector<double> durations;
  std::vector<double> device_durations;  // of the calls CUPTI timed
  std::vector<double> event_durations;   // of the calls torch's CUDA events timed
  uint64_t bytes = 0;
  std::map<uint32_t, std::pair<double, uint64_t>> lateness;  // by file: sum, samples
};

// One rank's arrival at one collective.
struct Arrival {
  uint32_t file;
  double wait_s;
  RowKey row;
};

struct Totals {
  std::map<RowKey, RowAcc> rows;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Arrival>> collectives;  // (comm, seq)
  std::map<uint64_t, std::string> names;
  std::map<uint64_t, int> nranks;
  std::map<uint64_t, std::set<int>> members;  // global ranks; an unknown one is left out
  std::vector<RankRow> ranks;                 // by file
};

// What one file's tail reports, counted into the job's totals.
class FileCosts final : public TailEvents {
 public:
  FileCosts(Totals* totals, uint32_t file) : totals_(totals), file_(file) {}

  void Reset() override {}
  void Header(const trace::RingInfo& info) override {
    RankRow& r = totals_->ranks[file_];
    r.rank = info.global_rank;
    r.host = info.host;
    r.pid = info.pid;
    for (const trace::CommInfo& c : info.comms) {
      Member(c.id);
      if (!c.name.empty()) totals_->names.try_emplace(c.id, c.name);
      if (c.nranks > 0) totals_->nranks[c.id] = std::max(totals_->nranks[c.id], c.nranks);
      if (c.nranks > 0) comm_ranks_[c.id] = c.nranks;
    }
  }
  void Issued(const trace::StoredRecord& record) override {
    // A call on a communicator the comm table lost (full, or created before the probe) still
    // makes this rank one of its members.
    Member(record.data.comm_id);
    if (WasEnqueued(record.data) && trace::IsPending(record.data.t_device_done_ns)) {
      ++totals_->ranks[file_].pending;
    }
  }
  void Completed(const trace::StoredRecord& record, bool was_pending) override {
    const trace::RecordData& r = record.data;
    if (!WasEnqueued(r)) return;
    if (was_pending) --totals_->ranks[file_].pending;
    const auto it = comm_ranks_.find(r.comm_id);
    const uint64_t bytes = OperationBytes(r, it == comm_ranks_.end() ? 1 : it->second);
    const RowKey key{r.comm_id, r.op, SizeClassOf(bytes)};
    RowAcc& row = totals_->rows[key];
    const double seconds = OperationSeconds(r);
    row.durations.push_back(seconds);
    row.bytes += bytes;
    RankRow& rank = totals_->ranks[file_];
    ++rank.calls;
    rank.seconds += seconds;
    if (r.seq > 0) rows_of_ops_.emplace(std::make_pair(r.comm_id, r.seq), key);
    last_completed_ = {record.index, key};
    const int64_t start = starts_.StartOf(r);
    if (trace::IsCollective(static_cast<trace::OpType>(r.op)) && r.seq > 0) {
      totals_->collectives[{r.comm_id, r.seq}].push_back(
          {file_, static_cast<double>(r.t_device_done_ns - start) / trace::kNsPerS, key});
    }
  }
  // The kernel of one operation (not of a whole group: comm and seq are 0 then) as CUPTI timed it:
  // aux its GPU start, send_buffer its GPU end (trace/record.h, device_compute).
  void DeviceCompute(const trace::StoredRecord& record) override {
    const trace::RecordData& r = record.data;
    if (r.comm_id == 0 || r.seq == 0 || r.aux == 0 || r.send_buffer <= r.aux) return;
    kernel_seconds_[{r.comm_id, r.seq}] =
        static_cast<double>(r.send_buffer - r.aux) / trace::kNsPerS;
  }
  // One operation's device time between the CUDA events torch recorded around it: aux names the
  // operation's record, count the time in ns. It follows its completed operation's record, so
  // only the newest completed operation is remembered for it.
  void EventDuration(const trace::StoredRecord& record) override {
    if (!last_completed_ || last_completed_->first != record.data.aux) return;
    totals_->rows[last_completed_->second].event_durations.push_back(
        static_cast<double>(record.data.count) / trace::kNsPerS);
    last_completed_.reset();
  }
  // After the file was read: each of its operations' kernel times into its row. A rank's
  // device_compute records are in its own file, so what is kept lasts one file.
  void JoinKernelTimes() {
    for (const auto& [op, seconds] : kernel_seconds_) {
      const auto it = rows_of_ops_.find(op);
      if (it != rows_of_ops_.end()) totals_->rows[it->second].device_durations.push_back(seconds);
    }
    kernel_seconds_.clear();
    rows_of_ops_.clear();
  }
  void Abandoned(const trace::StoredRecord& record) override {
    if (WasEnqueued(record.data) && totals_->ranks[file_].pending > 0) {
      --totals_->ranks[file_].pending;
    }
  }

 private:
  // Called per operation: consecutive calls on one communicator (most of them) skip the maps.
  void Member(uint64_t comm) {
    if (comm == 0 || comm == last_member_of_) return;
    last_member_of_ = comm;
    std::set<int>& members = totals_->members[comm];
    if (totals_->ranks[file_].rank >= 0) members.insert(totals_->ranks[file_].rank);
  }

  Totals* totals_;
  uint32_t file_;
  std::map<uint64_t, int> comm_ranks_;  // this rank's view of each communicator's size
  uint64_t last_member_of_ = 0;
  StreamStarts starts_;
  // This file's completed operations with a sequence number, and its kernel times, by (comm, seq).
  std::map<std::pair<uint64_t, uint64_t>, RowKey> rows_of_ops_;
  std::map<std::pair<uint64_t, uint64_t>, double> kernel_seconds_;
  // The record index and row of the operation completed last, for its event_duration.
  std::optional<std::pair<uint64_t, RowKey>> last_completed_;
};

// The nearest-rank quantile q of sorted values (the smallest value with at least q of them at or
// below it).
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto n = static_cast<double>(sorted.size());
  const size_t rank = static_cast<size_t>(std::ceil(q * n));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

std::string HexName(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, id);
  return buf;
}

void ScoreLateness(Totals* t) {
  for (auto& [unused, arrivals] : t->collectives) {
    if (arrivals.size() < 2) continue;
    std::vector<double> waits;
    for (const Arrival& a : arrivals) waits.push_back(a.wait_s);
    const std::vector<double> lateness = CollectiveLateness(waits);
    for (size_t i = 0; i < arrivals.size(); ++i) {
      auto& [sum, n] = t->rows[arrivals[i].row].lateness[arrivals[i].file];
      sum += lateness[i];
      ++n;
      RankRow& rank = t->ranks[arrivals[i].file];
      rank.mean_lateness_s += lateness[i];  // a sum until the end
      ++rank.lateness_samples;
    }
  }
  for (RankRow& r : t->ranks) {
    if (r.lateness_samples > 0) r.mean_lateness_s /= static_cast<double>(r.lateness_samples);
  }
}

// Every communicator the files named, by id, each labelled by its name and members.
std::vector<CommInstance> Instances(const Totals& t) {
  std::vector<CommInstance> out;
  for (const auto& [id, members] : t.members) {
    CommInstance c;
    c.id = id;
    const auto name = t.names.find(id);
    c.name = name != t.names.end() ? name->second : HexName(id);
    const auto n = t.nranks.find(id);
    c.nranks = n != t.nranks.end() ? n->second : -1;
    c.members.assign(members.begin(), members.end());
    out.push_back(std::move(c));
  }
  LabelCommInstances(&out);
  return out;
}

CostRow MakeRow(const Totals& t, const std::vector<CommInstance>& comms, const RowKey& key,
                RowAcc& acc) {
  CostRow row;
  row.comm_id = std::get<0>(key);
  row.op = static_cast<trace::OpType>(std::get<1>(key));
  row.size_class = std::get<2>(key);
  if (const CommInstance* c = FindCommInstance(comms, row.comm_id)) {
    row.comm_name = c->name;
    row.comm_label = c->label;
    row.members = c->members;
    row.nranks = c->nranks;
  } else {  // a record of communicator 0: no call names it, Issued leaves it out
    row.comm_name = row.comm_label = HexName(row.comm_id);
  }
  row.calls = acc.durations.size();
  row.device_calls = acc.device_durations.size();
  row.event_calls = acc.event_durations.size();
  if (row.calls > 0 && row.device_calls == row.calls) {
    acc.durations.swap(acc.device_durations);
    row.timing = "device";
  } else if (row.calls > 0 && row.event_calls == row.calls) {
    acc.durations.swap(acc.event_durations);
    row.timing = "event";
  }
  std::sort(acc.durations.begin(), acc.durations.end());
  row.bytes = acc.bytes;
  double total_s = 0;
  for (double d : acc.durations) total_s += d;
  row.mean_s = row.calls > 0 ? total_s / static_cast<double>(row.calls) : 0;
  row.p50_s = Quantile(acc.durations, 0.50);
  row.p90_s = Quantile(acc.durations, 0.90);
  row.p99_s = Quantile(acc.durations, 0.99);
  if (total_s > 0 && row.bytes > 0) {
    row.algbw_gbs = static_cast<double>(row.bytes) / total_s / kBytesPerGB;
    row.busbw_gbs = row.algbw_gbs * BusBandwidthFactor(row.op, row.nranks);
  }
  double worst = -1;
  for (const auto& [file, late] : acc.lateness) {
    const double mean = late.first / static_cast<double>(late.second);
    if (mean > worst) {
      worst = mean;
      row.slowest_rank = t.ranks[file].rank;
      row.slowest_lateness_s = mean;
    }
  }
  return row;
}

}  // namespace

bool BuildCostTable(RingSource& source, CostTable* out, std::string* error) {
  *out = CostTable{};
  std::string list_error;
  const std::vector<std::string> names = source.List(&list_error);
  if (names.empty() && !list_error.empty()) {
    *error = list_error;
    return false;
  }
  Totals t;
  t.ranks.resize(names.size());
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  std::vector<char> read(names.size(), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    FileTail tail;
    FileCosts costs(&t, static_cast<uint32_t>(i));
    std::string file_error;
    if (!tail.Poll(source, names[i], now_ns, &costs, &file_error)) {
      out->errors.push_back(file_error);
      continue;
    }
    costs.JoinKernelTimes();
    read[i] = 1;
    ++out->files;
  }
  ScoreLateness(&t);
  out->comms = Instances(t);
  for (auto& [key, acc] : t.rows) out->rows.push_back(MakeRow(t, out->comms, key, acc));
  // The communicators of one name in the order of their members: tp of ranks 0,1 before 2,3.
  std::sort(out->rows.begin(), out->rows.end(), [](const CostRow& a, const CostRow& b) {
    return std::tie(a.comm_name, a.members, a.comm_id, a.op, a.size_class) <
           std::tie(b.comm_name, b.members, b.comm_id, b.op, b.size_class);
  });
  for (size_t i = 0; i < names.size(); ++i) {
    if (read[i] != 0) out->ranks.push_back(t.ranks[i]);
  }
  std::sort(out->ranks.begin(), out->ranks.end(), [](const RankRow& a, const RankRow& b) {
    const bool ka = a.rank >= 0, kb = b.rank >= 0;
    if (ka != kb) return ka;
    return std::tie(a.rank, a.pid) < std::tie(b.rank, b.pid);
  });
  return true;
}

}  // namespace ncclscope::exporters
