// ncclGroupStart/End: calls made inside a group are recorded and launched together at the
// outermost ncclGroupEnd. Group state is per thread, as in NCCL.
#pragma once

#include <nccl.h>

#include "sim/emulator/comm.h"
#include "sim/emulator/op_desc.h"

namespace ncclsim {

void groupStart();

// Ends one nesting level; the outermost end finishes deferred communicator joins, then launches
// the recorded operations. Returns ncclInvalidUsage without a matching start.
ncclResult_t groupEnd();

// Drops the recorded operations (ncclGroupSimulateEnd); returns their modeled time in us.
ncclResult_t groupSimulateEnd(float* estimated_us);

bool groupActive();

// Records desc in the group, inside an implicit group of its own as NCCL's ncclEnqueueCheck
// does: launched now when no group is active.
void submitOp(OpDesc desc);

// Records a communicator whose join (all ranks arrived) the outermost ncclGroupEnd waits for.
void groupDeferJoin(Comm* comm);

}  // namespace ncclsim
