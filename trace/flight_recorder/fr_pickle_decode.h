// Pickle bytes of a PyTorch Flight Recorder dump -> FrDump in one pass over the opcodes, without
// the value tree of ParsePickle: the importer reads thousands of dumps of thousands of entries.
// The result is what DecodeFrDump(ParsePickle(...)) gives, for every input. Whatever the direct
// reader does not take (an opcode or layout torch does not write, any error) is read again by
// that generic path, so errors are the generic path's, naming the offset or the entry and key.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::flight_recorder {

// Which reader gave the answer, for tests and for counting fallbacks.
enum class FrPickleDecodePath {
  kDirect,   // the direct reader
  kGeneric,  // ParsePickle + DecodeFrDump, after the direct reader declined
  kRefused,  // neither: a stream the generic reader must not be given (the error says why)
};

// The dump in data[0, size), or nullopt with *error set (never empty) as
// DecodeFrDump(*ParsePickle(data, size, limits, error), error) sets it. With keep_frames false
// every entry's `frames` is left empty (nullopt) but still checked: a dump whose frames the
// generic path refuses is refused. The one input the generic path does not answer alike is a
// MARK whose values below it were taken before APPENDS/SETITEMS/TUPLE closes it, which the
// generic reader would index past its stack for: refused here (kRefused). `path` may be null.
// Thread-safe (no shared state); the result owns all its data.
std::optional<FrDump> DecodeFrDumpPickle(const void* data, size_t size, const PickleLimits& limits,
                                         std::string* error, bool keep_frames = true,
                                         FrPickleDecodePath* path = nullptr);

}  // namespace ncclscope::flight_recorder
