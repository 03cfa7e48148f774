#include "hang_detector/detectors/device_compute.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "hang_detector/detectors/straggler_steps.h"

namespace ncclscope::hang_detector {
namespace {

// The compute before each collective of one rank: by (communicator, sequence number) for a
// collective that launched its own kernel, by group for the kernels a group's end launched (the
// earliest of them: the compute before the group).
struct FileCompute {
  std::map<std::pair<uint64_t, uint64_t>, int64_t> by_call;
  std::unordered_map<uint64_t, std::pair<uint64_t, int64_t>> by_group;  // group -> (start, ns)
};

FileCompute IndexFile(const RankFile& f) {
  FileCompute c;
  for (const DeviceCompute& d : f.device_compute) {
    const auto op = static_cast<trace::OpType>(d.launch_op);
    if (op == trace::OpType::kGroupEnd && d.group_id != 0) {
      auto [it, inserted] = c.by_group.try_emplace(d.group_id, d.gpu_start, d.compute_ns);
      if (!inserted && d.gpu_start < it->second.first) it->second = {d.gpu_start, d.compute_ns};
    } else if (trace::IsCollective(op) && d.comm_id != 0 && d.seq != 0) {
      c.by_call[{d.comm_id, d.seq}] = d.compute_ns;
    }
  }
  return c;
}

// Seconds of compute before the collective at `pos`, NaN when unknown.
double ComputeBefore(const RankFile& f, const FileCompute& c, uint32_t pos) {
  const OpRecord& r = f.ops[pos];
  int64_t ns = -1;
  if (r.group_id != 0) {
    const auto it = c.by_group.find(r.group_id);
    if (it != c.by_group.end()) ns = it->second.second;
  } else {
    const auto it = c.by_call.find({f.ShapeAt(pos).comm_id, r.seq});
    if (it != c.by_call.end()) ns = it->second;
  }
  return ns >= 0 ? static_cast<double>(ns) * 1e-9 : kNaN;
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string DeviceText(const Context& ctx, int rank, const DeviceComputeExcess& e) {
  return "device time (CUPTI kernel activity): rank " + std::to_string(rank) + "'s GPU computes " +
         Millis(e.own_s) + " before each " + ctx.CommName(*e.timeline->comm) +
         " collective, the others " + Millis(e.others_s) + " (median of " +
         std::to_string(e.samples) + ")";
}

}  // namespace

DeviceComputeExcess DeviceComputeExcessOf(const Context& ctx,
                                          const std::vector<CommTimeline>& timelines, int rank) {
  DeviceComputeExcess best;
  std::unordered_map<uint32_t, FileCompute> indexed;
  auto compute_of = [&](uint32_t file) -> const FileCompute& {
    auto it = indexed.find(file);
    if (it == indexed.end()) it = indexed.emplace(file, IndexFile(ctx.index.files()[file])).first;
    return it->second;
  };
  for (const CommTimeline& t : timelines) {
    const auto me = std::find(t.ranks.begin(), t.ranks.end(), rank);
    if (me == t.ranks.end()) continue;
    const auto c = static_cast<size_t>(me - t.ranks.begin());
    if (t.samples.size() - t.WindowBegin() < kMinSamples) continue;  // too short to judge anyway
    // Every communicator of the rank must be seen: the compute a missing stretch hides may be
    // exactly the one that matters, so "ordinary" elsewhere proves nothing.
    if (ctx.index.files()[t.files[c]].device_compute.empty()) return {};
    std::vector<double> diff, own, others;
    for (size_t i = t.WindowBegin(); i < t.samples.size(); ++i) {
      const Sample& s = t.samples[i];
      std::vector<double> theirs;
      double mine = kNaN;
      for (size_t m = 0; m < t.ranks.size(); ++m) {
        const RankFile& f = ctx.index.files()[t.files[m]];
        const double v = ComputeBefore(f, compute_of(t.files[m]), s.pos[m]);
        if (m == c) {
          mine = v;
        } else if (std::isfinite(v)) {
          theirs.push_back(v);
        }
      }
      const double median = Median(theirs);
      if (!std::isfinite(mine) || !std::isfinite(median)) continue;
      diff.push_back(mine - median);
      own.push_back(mine);
      others.push_back(median);
    }
    if (diff.size() < kMinSamples) return {};
    DeviceComputeExcess e;
    e.known = true;
    e.excess_s = Median(diff);
    e.own_s = Median(own);
    e.others_s = Median(others);
    e.threshold_s = LatenessThreshold(StepTime(ctx, t));
    e.samples = diff.size();
    e.timeline = &t;
    if (!best.known || e.excess_s > best.excess_s) best = e;
  }
  return best;
}

void ApplyDeviceCompute(const Context& ctx, const std::vector<CommTimeline>& timelines,
                        std::vector<Verdict>* verdicts, size_t first) {
  for (size_t i = first; i < verdicts->size(); ++i) {
    Verdict& v = (*verdicts)[i];
    if (v.cls != VerdictClass::kStraggler) continue;
    const bool link = StartsWith(v.summary, "slow link");
    std::vector<int> computing;  // culprits whose GPU computes longer
    bool all_ordinary = true;
    std::vector<std::pair<int, DeviceComputeExcess>> judged;
    for (int r : v.culprits) {
      const DeviceComputeExcess e = DeviceComputeExcessOf(ctx, timelines, r);
      if (!e.known) {
        all_ordinary = false;
        continue;
      }
      judged.emplace_back(r, e);
      if (e.excess_s > e.threshold_s) computing.push_back(r);
      if (e.excess_s > e.threshold_s / 2) all_ordinary = false;
    }
    if (judged.empty()) continue;  // no device data: host time is all there is
    if (link && !computing.empty()) {
      // The transfers the host timed waited for a GPU still computing: a compute straggler.
      const auto e = std::find_if(judged.begin(), judged.end(),
                                  [&](const auto& j) { return j.first == computing[0]; });
      for (int r : v.culprits) {
        if (std::find(computing.begin(), computing.end(), r) == computing.end())
          v.victims.push_back(r);
      }
      SortUnique(&v.victims);
      v.culprits = computing;
      v.tie = computing.size() > 1;
      v.summary = "compute straggler (device time): " + RankList(v.culprits) + "'s GPU computes " +
                  Millis(e->second.excess_s) + " longer before each " +
                  ctx.CommName(*e->second.timeline->comm) +
                  " collective than the others (CUPTI kernel activity); the transfers the hosts "
                  "time as slow wait for it; " +
                  (v.victims.empty() ? std::string("nobody") : RankList(v.victims)) + " wait";
    } else if (!link && !computing.empty()) {
      v.summary +=
          "; its GPU computes " + Millis(judged[0].second.excess_s) + " longer (device time)";
    } else if (all_ordinary) {
      v.summary += link ? "; the culprits' GPU compute is ordinary (device time): the time is in "
                          "the transfers"
                        : "; its GPU compute is ordinary (device time): the delay is on the host, "
                          "outside its GPU kernels";
    }
    for (const auto& [r, e] : judged) {
      if (v.evidence.size() < 14) v.evidence.push_back({r, 0, false, DeviceText(ctx, r, e)});
    }
  }
}

}  // namespace ncclscope::hang_detector
