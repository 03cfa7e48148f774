// A synthetic training loop with NCCLSCOPE_CUPTI's device_compute records (step_model.h): world
// plus tensor-parallel pairs and two data-parallel groups, 8 ranks. The host side is one of the two
// patterns the host-time checks know (a rank arriving late, or transfers slow in the groups of one
// rank); the device side says whether that rank's GPU computed longer. Shared by the device-time
// verdict tests and the digest tests that carry device time to another node.
#pragma once

#include <string>
#include <vector>

#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/step_model.h"

namespace ncclscope::testing::device_compute_job {

constexpr int kRanks = 8;
constexpr int kSteps = 20;
constexpr double kCompute = 0.020;

struct Job {
  Job() : job(kRanks), model(&job, kRanks, 3) {
    std::vector<int> all;
    for (int r = 0; r < kRanks; ++r) all.push_back(r);
    world = job.Comm("world", all);
    for (int g = 0; g < kRanks / 2; ++g) groups.push_back({2 * g, 2 * g + 1});
    for (int parity = 0; parity < 2; ++parity) {
      std::vector<int> dp;
      for (int r = parity; r < kRanks; r += 2) dp.push_back(r);
      groups.push_back(dp);
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool tp = g < static_cast<size_t>(kRanks / 2);
      ids.push_back(job.Comm(tp ? "tp" : "dp", groups[g], world, tp ? 0 : 1));
    }
    model.compute_s = kCompute;
  }
  // The steps; after_step(s) runs once step s's collectives are written (the probe's records of
  // that step then follow them in the rings, as CUPTI's buffers flush while the job runs on).
  template <typename F>
  void Run(F after_step) {
    for (int s = 0; s < kSteps; ++s) {
      std::vector<ModelOp> ops;
      std::vector<std::vector<int>> members;
      for (size_t g = 0; g < groups.size(); ++g) {
        ops.push_back({ids[g], OpType::kAllReduce, 0.005});
        members.push_back(groups[g]);
      }
      std::vector<int> all;
      for (int r = 0; r < kRanks; ++r) all.push_back(r);
      ops.push_back({world, OpType::kAllReduce, 0.01});
      members.push_back(all);
      model.Step(ops, members);
      after_step(s);
    }
  }
  void Run() {
    Run([](int) {});
  }
  // What the probe writes on `rank`: its GPU computed `compute_s(step)` before each step's first
  // collective (its tensor-parallel one) and nothing between the others. A negative value writes
  // the record with an unknown stretch (activity lost); `skip` writes none for that rank (CUPTI
  // off there, or its kernels never ended).
  template <typename F>
  void DeviceCompute(int rank, F compute_s) {
    for (int s = 0; s < kSteps; ++s) DeviceComputeOfStep(rank, s, compute_s(s));
  }
  void DeviceComputeOfStep(int rank, int s, double compute_s) {
    const double t = model.Now();
    const int tp = rank / 2, dp = kRanks / 2 + rank % 2;
    Write(rank, ids[static_cast<size_t>(tp)], s + 1, compute_s, t);
    Write(rank, ids[static_cast<size_t>(dp)], s + 1, 0, t);
    Write(rank, world, s + 1, 0, t);
  }
  // A device_compute record as the probe writes it (trace/record.h).
  void Write(int rank, uint64_t comm, uint64_t seq, double compute_s, double t) {
    trace::RecordData& r = job.ProbeRecord(rank, comm, OpType::kDeviceCompute, t);
    r.seq = seq;
    r.count = compute_s > 0 ? static_cast<uint64_t>(compute_s * 1e9) : 0;
    r.peer = compute_s > 0 ? 1 : 0;
    r.redop = static_cast<int32_t>(OpType::kAllReduce);
    r.dtype = 0;
    r.aux = 1;
    r.send_buffer = 2;
    r.recv_buffer = compute_s < 0 ? 0 : 1;
    r.flags = 0;
  }
  // The job's files as the correlator reads them, after every rank's last heartbeat.
  std::vector<hang_detector::RankFile> Files() {
    job.HeartbeatAll(model.Now());
    return CompactFiles(job.Build());
  }
  // The straggler verdicts on files of this job (whole, cut for a digest, or decoded from one).
  std::vector<Verdict> StragglersOf(const std::vector<hang_detector::RankFile>& files) const {
    static const FakeProbe running;
    hang_detector::AnalyzeOptions o;
    o.now_wall_ns = JobBuilder::Wall(model.Now() + 0.01);
    o.probe = &running;
    std::vector<Verdict> out;
    for (const Verdict& v :
         hang_detector::Analyze(hang_detector::JobIndex::FromFiles(files, {}), o).verdicts) {
      if (v.cls == VerdictClass::kStraggler) out.push_back(v);
    }
    return out;
  }
  std::vector<Verdict> Stragglers() {
    job.HeartbeatAll(model.Now());
    std::vector<Verdict> out;
    for (const Verdict& v : AnalyzeAt(job, model.Now() + 0.01).verdicts) {
      if (v.cls == VerdictClass::kStraggler) out.push_back(v);
    }
    return out;
  }

  JobBuilder job;
  StepModel model;
  uint64_t world = 0;
  std::vector<std::vector<int>> groups;
  std::vector<uint64_t> ids;
};

}  // namespace ncclscope::testing::device_compute_job
