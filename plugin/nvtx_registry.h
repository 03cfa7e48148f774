// What the NVTX injection hands out and looks up: domains (by handle) and registered strings (by
// handle). Both are fixed tables: registration is rare (once per domain or name of a program) and
// may take a lock; lookup is on the push path and takes none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/nvtx_range_stack.h"

namespace ncclscope::plugin {

inline constexpr uint8_t kDefaultDomain = 0;
inline constexpr uint32_t kMaxDomains = 32;
// Ranges of a domain that is not ours to stack: NCCL's own "NCCL" domain (its API calls) and
// domains beyond the table.
inline constexpr uint8_t kUnstackedDomain = 0xFF;

// A domain created through nvtxDomainCreateA/W under `handle` (ours, or the forwarded tool's).
// Returns its slot; NCCL's "NCCL" domain and a full table give kUnstackedDomain. Thread-safe.
uint8_t RegisterDomain(const void* handle, const char* name) noexcept;
// The slot of a domain handle; the null handle is the default domain. Hot path, lock-free.
uint8_t DomainSlot(const void* handle) noexcept;
// Whether a slot is NCCL's own domain. Thread-safe.
bool IsNcclDomain(const void* handle) noexcept;

// Keeps a copy of a registered string under `handle` (ours or the forwarded tool's; cut at
// kNvtxNameChars). Returns false when the table is full (its ranges then have no name).
// Thread-safe.
bool RegisterString(const void* handle, const char* text, size_t len) noexcept;
// The copy registered under handle, or null. Hot path, lock-free.
const char* RegisteredString(const void* handle, uint8_t* len) noexcept;
// A handle of our own for a string registered when no tool is forwarded to. Thread-safe.
const void* NewStringHandle() noexcept;

// NCCL's own ranges seen (pushes in the "NCCL" domain) and the newest one's name, for tests and
// the docs' claim that NCCL's ranges reach the injection. Thread-safe.
uint64_t NcclRangesSeen() noexcept;
void NoteNcclRange(const char* name, size_t len) noexcept;
size_t LastNcclRange(char* out, size_t cap) noexcept;

}  // namespace ncclscope::plugin
