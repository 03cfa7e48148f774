// What the NVTX injection hands out and looks up: domains (by handle) and registered strings (by
// handle). Both are fixed tables: registration is rare (once per domain or name of a program) and
// may take a lock; lookup is on the push path and takes none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/nvtx/nvtx_range_stack.h"

namespace ncclscope::plugin {

inline constexpr uint8_t kDefaultDomain = 0;
inline constexpr uint32_t kMaxDomains = 32;
// NCCL's own "NCCL" domain: its API calls' ranges are decoded (nvtx_nccl_payload_calls.h), not
// stacked with the application's.
inline constexpr uint8_t kNcclDomain = 0xFE;
// A domain beyond the table: its ranges are not followed.
inline constexpr uint8_t kUnstackedDomain = 0xFF;

// A domain created through nvtxDomainCreateA/W under `handle` (ours, or the forwarded tool's).
// Returns its slot (below kMaxDomains), kNcclDomain for NCCL's "NCCL" domain, or kUnstackedDomain
// when the table is full. Thread-safe.
uint8_t RegisterDomain(const void* handle, const char* name) noexcept;
// What RegisterDomain returned for a handle; the null handle is the default domain, an unknown one
// kUnstackedDomain. Hot path, lock-free: NCCL's domain is a single compare.
uint8_t DomainSlot(const void* handle) noexcept;

// Keeps a copy of a registered string under `handle` (ours or the forwarded tool's; cut at
// kNvtxNameChars). Returns false when the table is full (its ranges then have no name).
// Thread-safe.
bool RegisterString(const void* handle, const char* text, size_t len) noexcept;
// The copy registered under handle, or null. Hot path, lock-free.
const char* RegisteredString(const void* handle, uint8_t* len) noexcept;
// A handle of our own for a string registered when no tool is forwarded to. Thread-safe.
const void* NewStringHandle() noexcept;

// NCCL's own ranges seen (pushes in the "NCCL" domain) and the newest one's name, for tests and
// the docs' claim that NCCL's ranges reach the injection. NoteNcclRange is on every NCCL call's
// path: it keeps the message as given (a registered handle is looked up only when read), and its
// count may miss a push when two threads note at once. Thread-safe.
uint64_t NcclRangesSeen() noexcept;
void NoteNcclRange(const char* ascii, const void* registered) noexcept;
size_t LastNcclRange(char* out, size_t cap) noexcept;

}  // namespace ncclscope::plugin
