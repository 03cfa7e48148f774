// A second reader of the plain-data pickles pickle_reader.h reads, for the direct FR dump decoder
// (fr_pickle_decode.h): nothing is materialised. Scalars are 16-byte values, strings stay in the
// input (offset and length), and containers are slices of one array. It takes what ParsePickle
// takes, with the same opcodes, memo and limits, and counts the limits at least as high as
// ParsePickle does (a dict value replaced by a repeated key stays counted here), so whenever it
// reads a pickle, ParsePickle reads the same tree. On anything else it declines, without a
// message: the caller falls back to ParsePickle, which names the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/flight_recorder/pickle_reader.h"
#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder::flat {

using Kind = PickleValue::Kind;

// kStr/kBytes: `bits` is the offset of the payload in the input, `len` its length. kInt: the
// int64 in `bits`; kFloat: the double's bits; kBool: 0 or 1; kList/kTuple/kDict: a node index.
struct Val {
  Kind kind = Kind::kNone;
  uint32_t len = 0;
  uint64_t bits = 0;
};

// A container: `count` values from items[begin] (a dict: key, value, key, value, ... in input
// order, repeated keys included). The counts describe the expanded subtree, as in ParsePickle.
struct Node {
  Kind kind = Kind::kList;
  bool inside_another = false;
  uint32_t height = 1;
  size_t begin = 0;
  size_t count = 0;
  uint64_t elements = 1;
  uint64_t bytes = 0;
};

// What a pickle holds, pointing into the input (which must outlive it).
struct FlatPickle {
  const uint8_t* data = nullptr;
  std::vector<Node> nodes;
  std::vector<Val> items;
  Val root;

  std::string_view Str(const Val& v) const {
    return {reinterpret_cast<const char*>(data) + v.bits, v.len};
  }
  const Node& NodeOf(const Val& v) const { return nodes[v.bits]; }
  std::span<const Val> Items(const Val& v) const {
    const Node& n = nodes[v.bits];
    return {items.data() + n.begin, n.count};
  }
  // The reader's working memory, kept with the result so that a FlatPickle read into again
  // reuses it (the importer reads thousands of dumps on each thread).
  std::vector<Val> stack;
  std::vector<Val> memo;
  std::vector<size_t> marks;

  // The value tree ParsePickle would give for `v` (repeated dict keys keep their first place
  // and their last value).
  PickleValue Materialize(const Val& v) const;
};

enum class FlatRead {
  kRead,
  // Not read here (an opcode or layout this reader does not take, an error, a limit): parse with
  // ParsePickle instead.
  kDeclined,
  // A stream that ParsePickle must not be given: an APPENDS, SETITEMS or TUPLE whose MARK lies
  // above the stack after values below it were taken (ParsePickle would index past its stack).
  kRefused,
};

// Reads data[0, size) into *out, reusing the memory *out holds. *error is set for kRefused only.
// Thread-safe (no shared state).
FlatRead ReadFlatPickle(const void* data, size_t size, const PickleLimits& limits, FlatPickle* out,
                        std::string* error);

}  // namespace ncclscope::flight_recorder::flat
