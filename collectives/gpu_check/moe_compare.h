// The bitwise comparison of the MoE kernels' outputs with the CPU twin's, naming the first
// difference so that a wrong byte says where it is and where its row came from: "rank 1: recv_x
// byte 70 (row 0, element 35: rank 2's token 5, slot 0) is 0xa5, the CPU twin's 0x3c". Pure.
#pragma once

#include <string>

#include "collectives/gpu_check/moe_twin.h"
#include "collectives/include/ncclscope/moe.h"

namespace ncclscope::gpu_check {

// Empty when rank r's dispatch outputs are the twin's: the status (which must be OK), recv_counts,
// recv_src (every row, the unwritten ones poisoned alike), send_rows and the rows of recv_x the
// device copy holds (the received ones and one more: still poison).
std::string CompareDispatch(const ncclscope_moe_plan& p, int r, const MoeRankOutput& got,
                            const MoeRankOutput& want);

// The same for combine: its status and `out`.
std::string CompareCombine(const ncclscope_moe_plan& p, int r, const MoeRankOutput& got,
                           const MoeRankOutput& want);

// "a peer never arrived (rank 0, detail 2)".
std::string StatusText(const ncclscope_moe_status& s);

}  // namespace ncclscope::gpu_check
