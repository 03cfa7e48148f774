// How a profiler event gets its operation and sequence number: the one place where the two ways
// the profiler runs differ (the event path itself, profiler_events.cpp, is one).
//   - Beside the interposer (profiler_plugin.cpp), which records every call: an API event takes
//     the call in progress on its thread (or, v4, the logged call its arguments name,
//     v4_call_log.h), and its Coll/P2p event copies that.
//   - Recording (plugin_only_events.cpp, NCCL_PROFILER_PLUGIN without LD_PRELOAD): the profiler
//     numbers each call from its own counters as the interposer would, and writes the call's
//     record when it does (a collective at its API stop, a send or receive at its P2p event,
//     AlltoAll, Gather and Scatter from their parts); groups, group ends and device completions
//     are recorded too.
// Event path: noexcept, no lock, no allocation. Each returns the handle NCCL gets, or null.
#pragma once

#include "plugin/profiler/profiler_event.h"
#include "plugin/profiler/profiler_handles.h"

namespace ncclscope::plugin::profiler {

// CollApi/P2pApi and Coll/P2p events of a context beside the interposer.
Handle* OpenInterposedCall(Context& c, const Event& e) noexcept;
Handle* LaunchInterposedCall(Context& c, const Event& e) noexcept;

}  // namespace ncclscope::plugin::profiler

namespace ncclscope::plugin::plugin_only {

// The events of a recording context.
profiler::Handle* StartGroup(profiler::Context& c, const profiler::Event& e) noexcept;
profiler::Handle* OpenCall(profiler::Context& c, const profiler::Event& e) noexcept;
profiler::Handle* LaunchCall(profiler::Context& c, const profiler::Event& e) noexcept;
// The stop of one of its group or operation handles, and a group's states.
void StopHandle(profiler::Handle& h) noexcept;
void RecordGroupState(profiler::Handle& g, int state) noexcept;
// A KernelChStop of a channel of operation h (owner: the Handle), as proxy_progress.h calls it.
void KernelChannelStopped(void* owner) noexcept;

}  // namespace ncclscope::plugin::plugin_only
