// Device stalls of point-to-point operations: send #k of A to B and B's receive #k were both
// issued, both wait at the head of their streams (nothing queued before either holds them, so no
// wait-for cycle explains them), and neither completed. Without the profiler nothing singles out a
// side and nothing is reported here (as before). With it: the side whose device work never started
// (no p2p_device_start while the profiler watched that rank's communicator) is the culprit; when
// both started, the proxy progress of the pair names the stage (stall_stage.h).
#pragma once

#include <vector>

#include "hang_detector/detectors/detectors.h"

namespace ncclscope::hang_detector {

// Appends one device-stall verdict per localized pair of every communicator. Thread-safe (reads
// the index only).
void CheckP2PDeviceStalls(const Context& ctx, std::vector<Verdict>* out);

}  // namespace ncclscope::hang_detector
