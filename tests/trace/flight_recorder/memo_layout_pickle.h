// Pickles with containers shared through the memo, as the two writers of real dumps lay them out
// (WritePickle shares strings only): torch::jit::Pickler memoizes a container another reference
// holds after filling it, BINPUT after SETITEMS (pickler.cpp, Pickler::pushIValue), and FR's
// dumper holds every stack frame dict in one table, so frames repeated across entries are BINGETs
// (c10d FlightRecorderDetail.hpp, getCollectiveTrace). CPython memoizes every container before
// filling it (pickle.py, save_dict/save_list: memoize, then _batch_setitems/_batch_appends).
#pragma once

#include <string>

#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder::testing {

enum class MemoLayout {
  kTorch,  // an equal dict or list seen before is a BINGET; memoized after filling
  // The same sharing, with every shared container memoized right after EMPTY_*, and items in
  // batches of 1000 as CPython writes them.
  kCPython,
};

// `value` as protocol 2 pickle bytes in `layout`, with strings memoized by value like torch.
// Which containers are shared: dicts only (frames), or dicts and lists (`share_lists`). Pure.
std::string WriteMemoLayoutPickle(const PickleValue& value, MemoLayout layout, bool share_lists);

}  // namespace ncclscope::flight_recorder::testing
