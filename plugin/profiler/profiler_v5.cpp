// The ncclProfiler_v5 (NCCL 2.28) and ncclProfiler_v6 tables: their descriptor read into the one
// Event (profiler_event.h). v6 adds copy-engine events to the union and keeps the members we read
// in place, so both read EventDescrV5. Coll and P2p events have their API event as parent.
#include "plugin/core/export.h"
#include "plugin/profiler/profiler_event.h"
#include "plugin/profiler/profiler_plugin.h"

namespace ncclscope::plugin::profiler {
namespace {

using prof_abi::EventDescrV5;

Event FromV5(const EventDescrV5& d) noexcept {
  Event e;
  e.has_api = true;
  e.parent = d.parentObj;
  switch (d.type) {
    case prof_abi::kGroupApi:
      e.kind = Event::kGroup;
      e.group_depth = d.groupApi.groupDepth;
      e.graph_captured = d.groupApi.graphCaptured;
      break;
    case prof_abi::kCollApi:
      e.kind = Event::kCollApi;
      e.func = d.collApi.func;
      e.count = d.collApi.count;
      e.datatype = d.collApi.datatype;
      e.root = d.collApi.root;
      e.stream = d.collApi.stream;
      e.graph_captured = d.collApi.graphCaptured;
      break;
    case prof_abi::kP2pApi:
      e.kind = Event::kP2pApi;
      e.func = d.p2pApi.func;
      e.count = d.p2pApi.count;
      e.datatype = d.p2pApi.datatype;
      e.stream = d.p2pApi.stream;
      e.graph_captured = d.p2pApi.graphCaptured;
      break;
    default:
      ReadSharedKinds(d, &e);  // the rest, or an event type we do not follow
      break;
  }
  return e;
}

// v5 and v6 pass commId before the mask (v4 passes it after the name).
template <int kAbi>
ncclResult_t InitV5(void** context, uint64_t comm_id, int* mask, const char* name, int /*nNodes*/,
                    int nranks, int rank, prof_abi::DebugLogger /*log*/) {
  return Init(kAbi, context, comm_id, mask, name, nranks, rank);
}

ncclResult_t StartV5(void* context, void** handle, void* descr) {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  if (descr == nullptr) return ncclSuccess;
  return StartEvent(context, handle, FromV5(*static_cast<const EventDescrV5*>(descr)));
}

}  // namespace
}  // namespace ncclscope::plugin::profiler

// NCCL 2.28.9 looks up ncclProfiler_v5, then v4 ...; later releases v6 first.
NCCLSCOPE_API const ncclscope::plugin::prof_abi::TableV6 ncclProfiler_v6 = {
    "ncclscope",
    ncclscope::plugin::profiler::InitV5<6>,
    ncclscope::plugin::profiler::StartV5,
    ncclscope::plugin::profiler::StopEvent,
    ncclscope::plugin::profiler::RecordEventState,
    ncclscope::plugin::profiler::Finalize};
NCCLSCOPE_API const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5 = {
    "ncclscope",
    ncclscope::plugin::profiler::InitV5<5>,
    ncclscope::plugin::profiler::StartV5,
    ncclscope::plugin::profiler::StopEvent,
    ncclscope::plugin::profiler::RecordEventState,
    ncclscope::plugin::profiler::Finalize};
