// The order in which NCCL 2.28.9 puts a group's collectives into a plan, which is the order of
// their Coll events and of their seqNumbers (src/include/comm.h ncclTaskCollSorterInsert,
// src/enqueue.cc ncclPrepareTasks): roughly by size descending, then gathered by
// (function, reduction op, datatype) in order of first appearance, each gathering smallest first.
#pragma once

#include <vector>

#include "sim/emulator/profiler.h"

namespace ncclsim {

// Reorders `colls` (collective tasks of one communicator, in call order, owners set). Pure.
void orderCollTasks(int nranks, std::vector<ProfTask*>* colls);

}  // namespace ncclsim
