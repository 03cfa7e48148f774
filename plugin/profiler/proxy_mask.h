// The activation mask the probe asks NCCL for. NCCL passes every init the address of one
// process-wide int (src/plugin/profiler.cc, ncclProfilerPluginInit: &ncclProfilerEventMask) and
// re-reads it at each operation's GroupApi start (ncclProfilerStartGroupApiEvent), snapshotting it
// into the operation's tasks (enqueue.cc, p2pTaskAppend/collTaskAppend: eActivationMask). So the
// probe keeps that address from its first init and ORs bits in at run time:
//   - always, the default (kWantedMaskV5/V4 of profiler_plugin.h): API, Coll, P2p and KernelCh
//     events, a few per operation and two per kernel channel;
//   - proxy detail (ProxyOp | ProxyStep: three to four callbacks per network transfer) when
//     NCCLSCOPE_PROFILER_PROXY=always, or, with =suspect (the default), while the watchdog suspects
//     a hang, off again once it resolves. Because NCCL snapshots the mask per operation, detail
//     switched on by a suspect covers the operations issued from then on, not the one already
//     stuck: set =always where the stuck operation itself must be localized.
// Bits another plugin set are never cleared: only the detail bits this probe added are taken back.
#pragma once

#include <cstdint>

#include "trace/ring_writer.h"

namespace ncclscope::plugin::profiler {

enum class ProxyDetailMode : uint8_t { kOff, kSuspect, kAlways };

// Parses NCCLSCOPE_PROFILER_PROXY ("off", "suspect", "always"); kSuspect for anything else.
ProxyDetailMode ParseProxyDetailMode(const char* text) noexcept;

// Remembers NCCL's mask (the first non-null one) and ORs `wanted` in, plus proxy detail when mode
// is kAlways; writes a profiler_mask record when the bits change. Thread-safe (init paths).
void AttachMask(int* mask, uint64_t wanted, ProxyDetailMode mode, trace::RingWriter& ring) noexcept;

// Switches proxy detail on (suspect) or off (resolved) in mode kSuspect; a no-op when unchanged or
// in another mode. Writes a profiler_mask record on a change. Background thread only.
void SetProxyDetail(bool on, trace::RingWriter& ring) noexcept;

// Forgets the mask address and mode (tests). Not thread-safe.
void ResetMaskForTest() noexcept;

}  // namespace ncclscope::plugin::profiler
