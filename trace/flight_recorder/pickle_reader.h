// Reads a pickle holding plain data only: what torch::jit::Pickler writes for a Flight Recorder
// dump (protocol 2) and what CPython's pickle.dumps writes for dicts, lists, tuples, str, bytes,
// int, float, bool and None (protocols 2 to 4). Every opcode that names, builds or calls anything
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID, EXT*, ...) is rejected: there is
// no path from the input to code. Hardened for files from anywhere, like the ring reader: every
// count and offset is checked against the input and the limits, and every error says what and at
// which byte offset.
//
// One reader, two ways to take its result: ReadPickle leaves it in flat form (pickle_flat.h),
// pointing into the input, which is how the FR dump decoder reads dumps fast; ParsePickle turns
// that into a value tree. Both read the same opcodes under the same limits with the same errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "trace/flight_recorder/pickle_flat.h"
#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder {

// Bounds on what one pickle may make. A 2000-entry FR dump with Python and C++ stack frames
// expands to about 750 values and 15 KiB of strings per entry (frames shared through the memo
// counted at every reference): 1.5M values and 30 MiB. The defaults leave more than twice that,
// and bound what a hostile file can make to roughly 1.5 GiB of memory.
struct PickleLimits {
  // Input larger than this is refused before reading.
  size_t max_input_bytes = size_t{1} << 30;
  // Containers nested deeper than this (an FR dump nests 5 deep), and open MARKs beyond it.
  size_t max_depth = 64;
  // Values in the result, counting a memo-shared value once per reference, and values alive
  // while reading (stack, memo).
  size_t max_elements = size_t{4} << 20;
  // Bytes of str and bytes payloads, counted like max_elements.
  size_t max_string_bytes = size_t{256} << 20;
};

// Reads the pickle in data[0, size) into *out, reusing the memory *out holds; *out then points
// into the input, which must outlive it. False with *error set (never empty) on anything that is
// not a plain-data pickle, e.g. "pickle: unsupported opcode GLOBAL (0x63) at offset 2: only plain
// data is read". The input must end right after its STOP. A repeated dict key keeps its first
// place and takes the last value (Python's dict), and a container shared through the memo is one
// node referenced from each place. The reader refuses to modify a container once it sits inside
// another, so no cycle can form. Thread-safe for distinct *out.
bool ReadPickle(const void* data, size_t size, const PickleLimits& limits, flat::FlatPickle* out,
                std::string* error);

// The value the pickle in data[0, size) holds, or nullopt with *error set as ReadPickle sets it.
// A value referenced twice through the memo is copied into both places. Thread-safe (no shared
// state); the result owns all its data.
std::optional<PickleValue> ParsePickle(const void* data, size_t size, const PickleLimits& limits,
                                       std::string* error);

}  // namespace ncclscope::flight_recorder
