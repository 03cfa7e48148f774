// NCCL's launch through a host function (src/enqueue.cc, 2.28.9): ncclLaunchPrepare gives every
// plan with proxy ops its hostStreamPlanTask as a host function (cudaLaunchHostFunc ->
// hostStreamPlanCallback) on the communicator's host stream, and makes the launch stream wait for
// that stream, when the plan is persistent (graph capture), ncclCudaLaunchBlocking is set, or
// persistent plans are alive and the host stream's serial event is still pending. The Group, Coll
// and P2p events, their stops and the proxy upload then come from the host stream's thread, not
// the caller's; KernelLaunch stays on the caller (ncclLaunchKernel). A plan without proxy ops runs
// hostStreamPlanTask on the caller after its kernel launch (ncclLaunchKernelAfter_NoCuda).
// The emulator has no graph capture, so of those conditions only CUDA_LAUNCH_BLOCKING applies.
#pragma once

#include <vector>

#include "sim/emulator/op_desc.h"

namespace ncclsim {

// ncclCudaLaunchBlocking: CUDA_LAUNCH_BLOCKING set, non-empty and not "0", read once per process
// as NCCL does (src/misc/cudawrap.cc initOnceFunc). Thread-safe.
bool launchBlocking();

// Launches the outermost group end's operations with their plan tasks as host functions (above).
// Calling thread; takes the operations.
void launchThroughHostStream(std::vector<OpDesc> descs);

}  // namespace ncclsim
