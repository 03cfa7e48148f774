// The ncclProfiler_v4 table (NCCL 2.26-2.27): its descriptor read into the one Event
// (profiler_event.h). v4 has no API events: Coll and P2p events carry the call's arguments, and
// their parent is the Group event.
#include "plugin/core/export.h"
#include "plugin/profiler/profiler_event.h"
#include "plugin/profiler/profiler_plugin.h"

namespace ncclscope::plugin::profiler {
namespace {

using prof_abi::EventDescrV4;

Event FromV4(const EventDescrV4& d) noexcept {
  Event e;
  e.parent = d.parentObj;
  if (d.type == prof_abi::kGroup) {
    e.kind = Event::kGroup;
  } else {
    ReadSharedKinds(d, &e);  // the rest, or an event type we do not follow
  }
  return e;
}

ncclResult_t InitV4(void** context, int* mask, const char* name, uint64_t comm_hash, int /*nNodes*/,
                    int nranks, int rank, prof_abi::DebugLogger /*log*/) {
  return Init(4, context, comm_hash, mask, name, nranks, rank);
}

ncclResult_t StartV4(void* context, void** handle, void* descr) {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  if (descr == nullptr) return ncclSuccess;
  return StartEvent(context, handle, FromV4(*static_cast<const EventDescrV4*>(descr)));
}

}  // namespace
}  // namespace ncclscope::plugin::profiler

NCCLSCOPE_API const ncclscope::plugin::prof_abi::TableV4 ncclProfiler_v4 = {
    "ncclscope",
    ncclscope::plugin::profiler::InitV4,
    ncclscope::plugin::profiler::StartV4,
    ncclscope::plugin::profiler::StopEvent,
    ncclscope::plugin::profiler::RecordEventState,
    ncclscope::plugin::profiler::Finalize};
