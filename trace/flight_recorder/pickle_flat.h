// The flat form of a plain-data pickle: what the pickle reader (pickle_reader.h) makes, without
// materialising anything. Scalars are 16-byte values, str and bytes payloads stay where they are
// (in the input, or in the text a flattened value tree owns), and containers are slices of one
// array. The FR dump decoder reads this form, so reading a dump copies only what the dump keeps.
// Converts to and from the value tree of pickle_value.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder::flat {

using Kind = PickleValue::Kind;

// kStr/kBytes: `bits` is the offset of the payload in the text, `len` its length. kInt: the
// int64 in `bits`; kFloat: the double's bits; kBool: 0 or 1; kList/kTuple/kDict: a node index.
struct Val {
  Kind kind = Kind::kNone;
  uint32_t len = 0;
  uint64_t bits = 0;
};

// A container: `count` values from items[begin] (a dict: key, value, key, value, ... in insertion
// order, each key once), in a slot of `capacity` items. The counts describe the expanded subtree
// (a value shared through the memo counted at every reference), for the reader's limits.
struct Node {
  Kind kind = Kind::kList;
  bool inside_another = false;
  uint32_t height = 1;
  size_t begin = 0;
  size_t count = 0;
  size_t capacity = 0;
  uint64_t elements = 1;
  uint64_t bytes = 0;
};

// A value in flat form. Move-only: the str payloads are in `text()`, which is the reader's input
// (it must outlive this) or the text this object owns (FlattenPickleValue).
class FlatPickle {
 public:
  FlatPickle() = default;
  FlatPickle(FlatPickle&&) = default;
  FlatPickle& operator=(FlatPickle&&) = default;
  FlatPickle(const FlatPickle&) = delete;
  FlatPickle& operator=(const FlatPickle&) = delete;

  std::string_view Str(const Val& v) const {
    return {reinterpret_cast<const char*>(data) + v.bits, v.len};
  }
  const Node& NodeOf(const Val& v) const { return nodes[v.bits]; }
  std::span<const Val> Items(const Val& v) const {
    const Node& n = nodes[v.bits];
    return {items.data() + n.begin, n.count};
  }
  // The value tree `v` stands for, every memo-shared container copied at each reference. Pure.
  PickleValue Materialize(const Val& v) const;

  const uint8_t* data = nullptr;  // the text str and bytes payloads point into
  std::vector<Node> nodes;
  std::vector<Val> items;
  Val root;
  // The reader's working memory, kept with the result so that a FlatPickle read into again
  // reuses it (the importer reads thousands of dumps on each thread).
  std::vector<Val> stack;
  std::vector<Val> memo;
  std::vector<size_t> marks;
  // The text of a flattened value tree (a vector keeps its buffer when moved).
  std::vector<char> owned_text;
};

// `value` in flat form, with its own copy of every string; no container is shared. Pure.
void FlattenPickleValue(const PickleValue& value, FlatPickle* out);

}  // namespace ncclscope::flight_recorder::flat
