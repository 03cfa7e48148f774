// Writes a value tree as a pickle the way torch::jit::Pickler writes a Flight Recorder dump
// (torch/csrc/jit/serialization/pickler.cpp, Pickler::pushIValueImpl and friends; FR calls it
// without type tags, c10d TraceUtils.h pickle_str): protocol 2, ints in the smallest of BININT1,
// BININT2, BININT or an 8-byte LONG1, strings as BINUNICODE memoized by value (a repeated string
// is a BINGET), lists as EMPTY_LIST MARK ... APPENDS, dicts as EMPTY_DICT MARK ... SETITEMS,
// tuples as TUPLE1..3 or MARK ... TUPLE, a shared dict (PickleDict::shared) written once and
// BINPUT after SETITEMS, its repeats BINGET (Pickler::pushIValue memoizes a container held more
// than once). Used for test data and for FR dumps made from rings.
#pragma once

#include <string>

#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder {

// The pickle bytes of `value`. bytes values, which torch never writes, use the protocol 3
// opcodes SHORT_BINBYTES/BINBYTES (Python reads them under any protocol header). Pure.
std::string WritePickle(const PickleValue& value);

}  // namespace ncclscope::flight_recorder
