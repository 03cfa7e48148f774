// The pickle reader's machine, shared by the files that implement its steps: the opcode loop
// (pickle_reader.cpp) and the building of lists, tuples and dicts (pickle_containers.cpp).
// Internal to trace/flight_recorder: callers use pickle_reader.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/flight_recorder/pickle_flat.h"
#include "trace/flight_recorder/pickle_opcodes.h"
#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::flight_recorder::pickle_detail {

using flat::FlatPickle;
using flat::Kind;
using flat::Node;
using flat::Val;

// torch and CPython number the memo densely from 0: ids up to this many past the number stored
// go into a table, any further out into a map, so a sparse id costs no table.
constexpr uint64_t kMemoSlack = 4096;
// A memo table slot that holds nothing: a kind no value has.
constexpr Kind kUnset = static_cast<Kind>(255);
// A dict with more keys than this finds a repeated key through an index instead of a scan.
constexpr size_t kLinearKeySearch = 16;
// Key sequences remembered as free of repeats (below).
constexpr size_t kKnownKeySets = 8;

inline bool IsNode(const Val& v) {
  return v.kind == Kind::kList || v.kind == Kind::kTuple || v.kind == Kind::kDict;
}
inline uint64_t ScalarBytes(const Val& v) {
  return v.kind == Kind::kStr || v.kind == Kind::kBytes ? v.len : 0;
}
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const PickleLimits& limits, FlatPickle* out,
         std::string* error)
      : p_(data),
        size_(size),
        limits_(limits),
        error_(error),
        out_(out),
        nodes_(std::move(out->nodes)),
        items_(std::move(out->items)),
        stack_(std::move(out->stack)),
        marks_(std::move(out->marks)),
        memo_(std::move(out->memo)) {}
  // The vectors are the Reader's while it reads (direct members are faster to reach in the
  // opcode loop) and go back to *out, with their memory, when it is done.
  ~Reader() {
    out_->nodes = std::move(nodes_);
    out_->items = std::move(items_);
    out_->stack = std::move(stack_);
    out_->marks = std::move(marks_);
    out_->memo = std::move(memo_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool Run();

 private:
  [[gnu::cold, gnu::noinline]] bool Fail(const std::string& what) {
    *error_ = "pickle: " + what + " at offset " + std::to_string(op_offset_);
    return false;
  }
  [[gnu::cold, gnu::noinline]] bool Fail(const char* what) { return Fail(std::string(what)); }
  // The opcode's name, then `what`.
  [[gnu::cold, gnu::noinline]] bool FailOp(const char* what) {
    return Fail(std::string(Name()) + what);
  }
  const char* Name() const { return op::OpcodeName(opcode_); }

  bool Need(uint64_t n) { return n <= size_ - pos_ || FailTruncated(n); }
  [[gnu::cold, gnu::noinline]] bool FailTruncated(uint64_t n) {
    return Fail("truncated input: " + std::string(Name()) + " needs " + std::to_string(n) +
                " more bytes, " + std::to_string(size_ - pos_) + " left");
  }
  template <typename T>
  bool ReadLe(T* out) {
    if (!Need(sizeof(T))) return false;
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<T>(static_cast<T>(p_[pos_ + i]) << (8 * i));
    pos_ += sizeof(T);
    *out = v;
    return true;
  }

  [[gnu::always_inline]] bool CountValue(uint64_t bytes) {
    values_made_ += 1;
    bytes_made_ += bytes;
    return (values_made_ <= limits_.max_elements && bytes_made_ <= limits_.max_string_bytes) ||
           FailCount();
  }
  [[gnu::cold, gnu::noinline]] bool FailCount() {
    if (values_made_ > limits_.max_elements)
      return Fail("more than " + std::to_string(limits_.max_elements) + " values (limit)");
    return Fail("more than " + std::to_string(limits_.max_string_bytes) +
                " bytes of strings (limit)");
  }
  [[gnu::always_inline]] bool Push(const Val& v) {
    if (stack_.size() >= limits_.max_elements) return FailStack();
    stack_.push_back(v);
    return true;
  }
  [[gnu::cold, gnu::noinline]] bool FailStack() {
    return Fail("stack deeper than the element limit");
  }
  bool PushScalar(Kind kind, uint64_t bits) { return CountValue(0) && Push(Val{kind, 0, bits}); }
  bool PushNode(Kind kind) {
    if (!CountValue(0)) return false;
    nodes_.emplace_back().kind = kind;
    return Push(Val{kind, 0, nodes_.size() - 1});
  }

  uint64_t ElementsOf(const Val& v) const { return IsNode(v) ? nodes_[v.bits].elements : 1; }
  uint64_t BytesOf(const Val& v) const { return IsNode(v) ? nodes_[v.bits].bytes : ScalarBytes(v); }
  // Adds `child` to the expanded counts of `parent` and checks the limits.
  bool AddToCounts(Node& parent, const Val& child) {
    if (IsNode(child)) {
      const Node& c = nodes_[child.bits];
      parent.elements += c.elements;
      parent.bytes += c.bytes;
      parent.height = std::max(parent.height, c.height + 1);
    } else {
      parent.elements += 1;
      parent.bytes += ScalarBytes(child);
    }
    if (parent.elements <= limits_.max_elements && parent.bytes <= limits_.max_string_bytes &&
        parent.height <= limits_.max_depth) {
      return true;
    }
    return FailContainer(parent);
  }
  [[gnu::cold, gnu::noinline]] bool FailContainer(const Node& parent) {
    if (parent.elements > limits_.max_elements)
      return Fail("a container expands to more than " + std::to_string(limits_.max_elements) +
                  " values (limit; memo references count each time)");
    if (parent.bytes > limits_.max_string_bytes)
      return Fail("a container expands to more than " + std::to_string(limits_.max_string_bytes) +
                  " bytes of strings (limit)");
    return Fail("containers nested deeper than " + std::to_string(limits_.max_depth) + " (limit)");
  }
  // A container `child` goes into `node`: never itself, and never changed again afterwards.
  // With that, and no container put into itself, no container can reach itself (the last edge
  // closing a cycle would have to modify a container that is already inside another).
  bool Adopt(size_t node, const Val& child) {
    if (!IsNode(child)) return true;
    if (child.bits == node) return FailOp(" would put a container into itself");
    nodes_[child.bits].inside_another = true;
    return true;
  }

  bool ReadString(uint64_t length, bool is_bytes);
  bool ReadLong1();
  // Inlined into Run's loop, as Get into the opcode switch: the opcode loop is most of a read.
  [[gnu::always_inline]] bool ReadOne(bool* stopped);
  bool PopMark(size_t* mark);
  [[gnu::always_inline]] Val* MemoSlot(uint64_t id);
  [[gnu::cold, gnu::noinline]] bool FailMemoId(uint64_t id) {
    return Fail("memo id " + std::to_string(id) + " was never stored");
  }
  bool Memo(uint64_t id);
  [[gnu::always_inline]] bool Get(uint64_t id);
  bool Target(size_t position, Kind kind, size_t* node);
  bool AppendItems(size_t node, const Val* first, size_t n);
  bool SetItems(size_t node, const Val* pairs, size_t n_pairs);
  bool KnownDistinct(const Val* pairs, size_t n_pairs) const;
  void RememberDistinct(const Val* pairs, size_t n_pairs);
  size_t FindKey(size_t node, const Val& key);
  bool KeyEquals(const Val& a, const Val& b) const {
    if (a.kind != b.kind) return false;
    if (a.kind == Kind::kInt) return a.bits == b.bits;
    return a.len == b.len &&
           (a.bits == b.bits || std::memcmp(p_ + a.bits, p_ + b.bits, a.len) == 0);
  }
  std::string_view Text(const Val& v) const {
    return {reinterpret_cast<const char*>(p_) + v.bits, v.len};
  }
  void Place(size_t node, const Val* first, size_t n);

  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  uint8_t opcode_ = 0;
  const PickleLimits& limits_;
  std::string* error_;
  FlatPickle* out_;
  std::vector<Node> nodes_;
  std::vector<Val> items_;
  std::vector<Val> stack_;
  std::vector<size_t> marks_;
  std::vector<Val> memo_;                       // ids near the count stored; kUnset: none
  std::unordered_map<uint64_t, Val> memo_far_;  // ids further out
  size_t memo_size_ = 0;                        // ids stored, in both
  uint64_t values_made_ = 0;
  uint64_t bytes_made_ = 0;
  // Dicts past kLinearKeySearch keys: node -> key -> pair index.
  struct KeyIndex {
    std::unordered_map<std::string_view, size_t> strs;
    std::unordered_map<uint64_t, size_t> ints;
  };
  std::unordered_map<size_t, KeyIndex> key_index_;
  // Sequences of str keys (their offsets in the input) known to hold no key twice. torch and
  // CPython memoize key strings, so every FR entry dict after the first, and every stack frame,
  // names its keys by the same offsets as the first: matching them proves the keys distinct
  // without comparing text.
  std::array<std::vector<uint64_t>, kKnownKeySets> known_keys_;
};

}  // namespace ncclscope::flight_recorder::pickle_detail
