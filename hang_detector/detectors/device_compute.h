// Device time for the straggler verdicts: with NCCLSCOPE_CUPTI=1 each rank's ring holds, per NCCL
// kernel, the GPU time compute kernels took since the previous NCCL kernel (device_compute
// records). A compute straggler's GPU computes longer before its collectives than the other
// members'; a slow link's culprit computes like the others. Host times cannot tell these apart
// when the host runs ahead of its GPU: both make the others wait in their collectives.
#pragma once

#include <string>
#include <vector>

#include "hang_detector/detectors/straggler_scores.h"

namespace ncclscope::hang_detector {

// How much longer one rank's GPU computes before the collectives of its communicators than the
// other members' do, on the communicator where the difference is largest.
struct DeviceComputeExcess {
  bool known = false;      // enough samples with device_compute on this rank and the others
  double excess_s = kNaN;  // median over samples of (own - the others' median)
  double own_s = kNaN;     // medians over the same samples
  double others_s = kNaN;
  double threshold_s = kNaN;  // what counts as longer on that communicator (as for lateness)
  size_t samples = 0;
  const CommTimeline* timeline = nullptr;
};

// A missing device_compute (no record: a kernel that never ended, activity lost, CUPTI off) is
// unknown, never zero. Pure.
DeviceComputeExcess DeviceComputeExcessOf(const Context& ctx,
                                          const std::vector<CommTimeline>& timelines, int rank);

// Rewrites the straggler verdicts in [first, end) of *verdicts where device time decides: a slow
// link whose culprit computes longer on its GPU is a compute straggler; a compute straggler or
// slow link whose culprit's GPU compute is ordinary says so. Verdicts without device data are
// left alone. Pure.
void ApplyDeviceCompute(const Context& ctx, const std::vector<CommTimeline>& timelines,
                        std::vector<Verdict>* verdicts, size_t first);

}  // namespace ncclscope::hang_detector
