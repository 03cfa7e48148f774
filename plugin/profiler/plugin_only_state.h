// The pieces of plugin-only recording (plugin_only_recorder.h) shared by its event files
// (plugin_only_events.cpp, plugin_only_parts.cpp). Its communicators and handles are the
// profiler's (profiler_handles.h), with Context::records set. Event path: no lock, no allocation.
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/profiler/profiler_handles.h"

namespace ncclscope::plugin::plugin_only {

// Appends h's record with sequence number seq (`peer` for send/recv, `redop` for a reduction) and
// keeps its slot, seq and peer in h.
void WriteRecord(profiler::Handle& h, const profiler::Context& c, uint64_t seq, int peer,
                 int32_t redop = -1) noexcept;
uint64_t NextCollSeq(profiler::Context& c) noexcept;
// Stamps h's record's device completion; false when the ring refused it (no runtime, overwritten).
bool CompleteDeviceOf(const profiler::Handle& h) noexcept;

// AlltoAll, Gather and Scatter as one collective record each (plugin_only_parts.cpp). Each returns
// false when `part` is no part of such a call, and the caller goes on as for a send or receive.
// A P2pApi event opened `part` under `group`: it joins the call the thread is in when NCCL's NVTX
// range says that call is an AlltoAll, Gather or Scatter on c.
void JoinWhole(profiler::Context& c, const void* group, profiler::Handle& part) noexcept;
bool PartStopped(profiler::Handle& part) noexcept;                     // its P2pApi stop
bool PartLaunched(profiler::Handle& part, uint8_t channels) noexcept;  // its P2p event
bool PartChannelStopped(const profiler::Handle& part) noexcept;  // one of its KernelChStop states

// Counters behind GetStats.
struct Counters {
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> completions{0};
};
Counters& GetCounters() noexcept;

}  // namespace ncclscope::plugin::plugin_only
