#include "exporters/prometheus/verdict_poller.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <string>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/incident/incident_files.h"
#include "hang_detector/ingest/process_probe.h"
#include "trace/clock.h"

namespace ncclscope::exporters {

VerdictPoller::VerdictPoller(AnalyzeFn analyze, double interval_s)
    : analyze_(std::move(analyze)), interval_s_(interval_s) {}

VerdictPoller::~VerdictPoller() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void VerdictPoller::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void VerdictPoller::RunOnce() {
  std::shared_ptr<const hang_detector::Analysis> result;
  try {
    result = analyze_();
  } catch (const std::exception& e) {
    // An analysis that fails (out of memory on a huge directory, say) keeps the previous one
    // rather than taking the exporter down.
    std::cerr << "ncclscope exporter: analysis failed: " << e.what() << "\n";
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  latest_ = incidents_.Observe(std::move(result), trace::RealtimeNs());
}

std::shared_ptr<const hang_detector::Analysis> VerdictPoller::Latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

VerdictSnapshot VerdictPoller::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {latest_, incidents_.counts()};
}

void VerdictPoller::Loop() {
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_s_));
  for (;;) {
    RunOnce();
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, period, [this] { return stop_; })) return;
  }
}

VerdictPoller::AnalyzeFn AnalyzeTraceDir(const std::string& dir,
                                         const hang_detector::AnalyzeOptions& base,
                                         const std::string& job) {
  std::shared_ptr<const hang_detector::ProcessProbe> probe = hang_detector::MakeLinuxProcessProbe();
  return [dir, base, probe, job]() -> std::shared_ptr<const hang_detector::Analysis> {
    std::string error;
    const auto index = hang_detector::JobIndex::FromDir(dir, {1, job}, &error);
    if (!index) return nullptr;
    hang_detector::AnalyzeOptions options = base;
    options.now_wall_ns = trace::RealtimeNs();
    options.probe = probe.get();
    auto analysis =
        std::make_shared<hang_detector::Analysis>(hang_detector::Analyze(*index, options));
    if (!analysis->usable) return nullptr;
    hang_detector::ApplyRecordedIncident(dir, options.now_wall_ns, analysis.get());
    return analysis;
  };
}

}  // namespace ncclscope::exporters
