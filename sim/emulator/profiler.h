// The emulated NCCL's side of the profiler plugin API, following NCCL 2.28.9's own call sites
// (src/enqueue.cc, src/group.cc, src/plugin/profiler.cc, src/proxy.cc, src/transport/net.cc,
// src/transport/profiler.cc). docs/emulator.md lists the exact event sequences.
//
// On the calling thread, per NCCL task (a collective is one task; Send, Recv, and AlltoAll,
// Gather and Scatter, which NCCL runs as sends and receives, are one task per send or receive):
//   GroupApi start (outermost group only) + state 23, CollApi or P2pApi start and stop;
// at the outermost ncclGroupEnd: GroupApi state 24, then per communicator KernelLaunch start and
// stop, Group start, Coll and P2p starts (parent: the API event; parentGroup: Group), their stops
// ("enqueued", not finished), Group stop; finally GroupApi stop. With CUDA_LAUNCH_BLOCKING set,
// the Group, Coll and P2p events come from a host stream's thread instead (launch_host_func.h).
// On the stream worker, which plays NCCL's proxy thread (profiler_proxy.h): one KernelCh per task
// and channel, ProxyOp per (channel, peer, direction), ProxySteps with net.cc's states.
//
// A collective on a 1-rank communicator emits nothing (NCCL runs it as a copy). Every function is
// a no-op when no plugin is loaded; the activation mask is read at each task, as NCCL does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <cuda.h>
#include <nccl.h>

struct ncclComm;

namespace ncclsim {

struct OpDesc;
using Comm = ::ncclComm;

// Per communicator, owned by the communicator (never freed, like it).
struct ProfilerComm {
  void* ctx = nullptr;           // the plugin's context, as its init wrote it (null: opted out)
  std::atomic<bool> live{true};  // false after finalize: no more events
  std::atomic<uint64_t> coll_seq[16] = {};  // NCCL's comm->seqNumber, per collective function
};

// One NCCL task of an operation.
struct ProfTask {
  bool p2p = false;   // a Send or Recv task (P2pApi/P2p events), else a collective (CollApi/Coll)
  bool send = false;  // p2p: a send
  bool dropped = false;        // a send to self paired with an in-place receive: NCCL plans neither
  int peer = -1;               // p2p: the peer
  const void* buff = nullptr;  // p2p: this task's part of the user buffer
  size_t count = 0;            // as NCCL's task: AllGather and Broadcast in bytes
  ncclDataType_t dtype = ncclInt8;
  int mask = 0;                   // activation mask at append
  void* group_api = nullptr;      // GroupApi handle in force at append
  void* api = nullptr;            // CollApi / P2pApi handle
  void* event = nullptr;          // Coll / P2p handle: parent of KernelCh and ProxyOp
  const OpDesc* owner = nullptr;  // the operation, while its group is being launched
};

// The profiled tasks of one operation (absent when no plugin is loaded).
struct ProfOp {
  std::vector<ProfTask> tasks;
};

// Loads the plugin (first call only) and calls its init for the new communicator. `name` is
// ncclConfig_t.commName or null. Returns the per-comm state, null when no plugin is in use.
// Thread-safe.
ProfilerComm* profilerCommInit(uint64_t comm_hash, const char* name, int nranks, int rank);
// Calls the plugin's finalize for the communicator; no event follows. Thread-safe; pc may be null.
void profilerCommFinalize(ProfilerComm* pc);

// One communicator's share of a group launch, as NCCL's ncclKernelPlan: its profiled tasks in
// plan order (ncclPrepareTasks), the mask and GroupApi of its first task with a nonzero mask
// (colls first), and its Group event while hostStreamPlanTask runs.
struct ProfPlan {
  Comm* comm = nullptr;
  CUstream launch_stream = nullptr;  // planner->streams->stream: the newest stream the group met
  std::vector<ProfTask*> colls;
  std::vector<ProfTask*> p2ps;
  int mask = 0;
  void* group_api = nullptr;
  void* group = nullptr;
};

// Calling thread, in NCCL's order: profilerEnqueueEnter at the start of a collective or p2p call
// (ncclEnqueueCheck), profilerTaskAppend once its group is open (taskAppend),
// profilerGroupEndEnter at every ncclGroupEnd (also the call's own implicit one) before the depth
// drops to `depth_after`, profilerLaunch for the outermost end's operations, then
// profilerGroupEndExit. Thread-confined (the state is per thread, as NCCL's).
void profilerEnqueueEnter();
void profilerTaskAppend(OpDesc* d, int group_depth);
void profilerGroupEndEnter();
void profilerLaunch(std::vector<OpDesc>& descs);
void profilerGroupEndExit();

// profilerLaunch in its parts, for launches whose plan task runs on another thread
// (launch_host_func.h). profilerPlans: the plans of the outermost end's operations, one per live
// communicator with a profiled task, in the order the group met them; calling thread, tasks
// point into `descs`, which must outlive the plans. profilerKernelLaunch: ncclLaunchKernel's
// KernelLaunch start and stop; calling thread. profilerPlanStart / profilerPlanStop:
// hostStreamPlanTask's Group and task starts (numbering the collectives) before the proxy upload,
// and the task stops and Group stop after it; one thread at a time per plan, any thread.
std::vector<ProfPlan> profilerPlans(std::vector<OpDesc>& descs);
void profilerKernelLaunch(const ProfPlan& plan);
void profilerPlanStart(ProfPlan* plan);
void profilerPlanStop(ProfPlan* plan);

}  // namespace ncclsim
