// The reader's containers: which list, tuple or dict an opcode fills, and how values go into
// its slice of the flat item array with their counts checked.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "trace/flight_recorder/pickle_reader_state.h"

namespace ncclscope::flight_recorder::pickle_detail {

// The container of `kind` at stack position `position`, which may still change.
bool Reader::Target(size_t position, Kind kind, size_t* node) {
  const Val& t = stack_[position];
  if (t.kind != kind) {
    return Fail(std::string(Name()) + " into a " + PickleKindName(t.kind) + ", not a " +
                PickleKindName(kind));
  }
  if (nodes_[t.bits].inside_another) {
    return Fail(std::string(Name()) + " into a " + PickleKindName(kind) +
                " that is already inside another container");
  }
  *node = t.bits;
  return true;
}

// Puts n values at the end of the slice of `node`. A slice that is not the last of the array
// moves to the end with room to double, so that moving costs O(1) per value over a read.
void Reader::Place(size_t node, const Val* first, size_t n) {
  Node& p = nodes_[node];
  if (p.capacity == 0) p.begin = items_.size();
  if (p.count + n <= p.capacity) {
    std::copy(first, first + n, items_.begin() + static_cast<ptrdiff_t>(p.begin + p.count));
  } else if (p.begin + p.capacity == items_.size()) {
    items_.resize(p.begin + p.count);
    items_.insert(items_.end(), first, first + n);
    p.capacity = p.count + n;
  } else {
    const size_t from = p.begin;
    const size_t capacity = std::max(p.count + n, 2 * p.count);
    p.begin = items_.size();
    items_.resize(p.begin + capacity);
    const auto base = items_.begin();
    std::copy(base + static_cast<ptrdiff_t>(from), base + static_cast<ptrdiff_t>(from + p.count),
              base + static_cast<ptrdiff_t>(p.begin));
    std::copy(first, first + n, base + static_cast<ptrdiff_t>(p.begin + p.count));
    p.capacity = capacity;
  }
  p.count += n;
}

// Appends n values to the list or tuple `node`, each checked and counted in order (the counts
// kept in locals while they run).
bool Reader::AppendItems(size_t node, const Val* first, size_t n) {
  Node counts = nodes_[node];
  for (size_t i = 0; i < n; ++i) {
    if (!Adopt(node, first[i]) || !AddToCounts(counts, first[i])) return false;
  }
  Node& parent = nodes_[node];
  parent.elements = counts.elements;
  parent.bytes = counts.bytes;
  parent.height = counts.height;
  Place(node, first, n);
  return true;
}

bool Reader::KnownDistinct(const Val* pairs, size_t n_pairs) const {
  const std::vector<uint64_t>& known = known_keys_[pairs[0].bits % kKnownKeySets];
  if (n_pairs > known.size()) return false;
  for (size_t i = 0; i < n_pairs; ++i) {
    if (pairs[2 * i].kind != Kind::kStr || pairs[2 * i].bits != known[i]) return false;
  }
  return true;
}

void Reader::RememberDistinct(const Val* pairs, size_t n_pairs) {
  std::vector<uint64_t>& known = known_keys_[pairs[0].bits % kKnownKeySets];
  known.resize(n_pairs);
  for (size_t i = 0; i < n_pairs; ++i) known[i] = pairs[2 * i].bits;
}

// The pair index of a key equal to `key` in the dict `node`, or its number of pairs.
size_t Reader::FindKey(size_t node, const Val& key) {
  const Node& d = nodes_[node];
  const size_t pairs = d.count / 2;
  if (pairs <= kLinearKeySearch) {
    for (size_t i = 0; i < pairs; ++i) {
      if (KeyEquals(items_[d.begin + 2 * i], key)) return i;
    }
    return pairs;
  }
  auto it = key_index_.find(node);
  if (it == key_index_.end()) {
    KeyIndex& index = key_index_[node];
    for (size_t i = 0; i < pairs; ++i) {
      const Val& k = items_[d.begin + 2 * i];
      if (k.kind == Kind::kInt) {
        index.ints.emplace(k.bits, i);
      } else {
        index.strs.emplace(Text(k), i);
      }
    }
    it = key_index_.find(node);
  }
  KeyIndex& index = it->second;
  if (key.kind == Kind::kInt) {
    auto found = index.ints.emplace(key.bits, pairs).first;
    return found->second;
  }
  return index.strs.emplace(Text(key), pairs).first->second;
}

// Sets n_pairs keys in the dict `node`, each checked and counted in order. Python keeps a
// repeated key at its first place with the last value, and so does the slice.
bool Reader::SetItems(size_t node, const Val* pairs, size_t n_pairs) {
  if (n_pairs == 0) return true;
  if (nodes_[node].count == 0 && KnownDistinct(pairs, n_pairs)) {
    for (size_t i = 0; i < n_pairs; ++i) {
      const Val& value = pairs[2 * i + 1];
      if (!Adopt(node, value)) return false;
      Node& parent = nodes_[node];
      parent.elements += 1;
      parent.bytes += pairs[2 * i].len;
      if (!AddToCounts(parent, value)) return false;
    }
    Place(node, pairs, 2 * n_pairs);
    return true;
  }
  const bool fresh = nodes_[node].count == 0;
  bool all_str_distinct = true;
  for (size_t i = 0; i < n_pairs; ++i) {
    const Val& key = pairs[2 * i];
    const Val& value = pairs[2 * i + 1];
    if (!Adopt(node, value)) return false;
    if (key.kind != Kind::kStr && key.kind != Kind::kInt)
      return Fail(std::string("dict key of type ") + PickleKindName(key.kind) +
                  " (only str and int)");
    all_str_distinct = all_str_distinct && key.kind == Kind::kStr;
    const size_t found = FindKey(node, key);
    Node& parent = nodes_[node];
    if (found < parent.count / 2) {
      all_str_distinct = false;
      Val& old = items_[parent.begin + 2 * found + 1];
      parent.elements -= ElementsOf(old);
      parent.bytes -= BytesOf(old);
      // The height may only shrink here; keeping the larger one errs on the safe side.
      if (!AddToCounts(parent, value)) return false;
      old = value;
      continue;
    }
    // The key counts as a value of the expanded tree too.
    parent.elements += 1;
    parent.bytes += ScalarBytes(key);
    if (!AddToCounts(parent, value)) return false;
    Place(node, pairs + 2 * i, 2);
  }
  if (fresh && all_str_distinct) RememberDistinct(pairs, n_pairs);
  return true;
}

}  // namespace ncclscope::flight_recorder::pickle_detail
