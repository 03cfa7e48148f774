#include "trace/flight_recorder/pickle_reader.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/flight_recorder/pickle_opcodes.h"
#include "trace/flight_recorder/utf8.h"

namespace ncclscope::flight_recorder {

namespace {

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

bool IsNode(const Val& v) {
  return v.kind == Kind::kList || v.kind == Kind::kTuple || v.kind == Kind::kDict;
}
uint64_t ScalarBytes(const Val& v) {
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

bool Reader::ReadString(uint64_t length, bool is_bytes) {
  if (!Need(length)) return false;
  const std::string_view text(reinterpret_cast<const char*>(p_ + pos_), length);
  // Python decodes with 'surrogatepass'; anything else that is not UTF-8 fails there too.
  if (size_t bad = 0; !is_bytes && !IsUtf8AllowingSurrogates(text, &bad))
    return Fail("str is not UTF-8 (byte " + std::to_string(bad) + " of the string)");
  const Val v{is_bytes ? Kind::kBytes : Kind::kStr, static_cast<uint32_t>(length), pos_};
  pos_ += length;
  if (!CountValue(length)) return false;
  // Only limits above the defaults' 256 MiB of strings let a payload get this large.
  if (length > UINT32_MAX)
    return Fail("a str or bytes payload of " + std::to_string(length) + " bytes (at most 4 GiB)");
  return Push(v);
}

// LONG1: a little-endian two's complement integer of n bytes (n = 0 is zero). torch writes 8
// bytes for every value outside int32 (pickler.cpp, Pickler::pushInt); CPython the fewest bytes.
bool Reader::ReadLong1() {
  uint8_t n = 0;
  if (!ReadLe(&n) || !Need(n)) return false;
  const uint8_t* b = p_ + pos_;
  pos_ += n;
  // Bytes beyond the 8th must only repeat the sign of the 8th.
  const bool negative = n > 0 && (b[n - 1] & 0x80) != 0;
  for (size_t i = 8; i < n; ++i) {
    if (b[i] != (negative ? 0xff : 0x00)) return Fail("LONG1 integer does not fit in int64");
  }
  if (n > 8 && ((b[7] & 0x80) != 0) != negative) return Fail("LONG1 integer does not fit in int64");
  uint64_t v = negative ? ~uint64_t{0} : 0;
  for (size_t i = 0; i < n && i < 8; ++i) {
    v &= ~(uint64_t{0xff} << (8 * i));
    v |= uint64_t{b[i]} << (8 * i);
  }
  return PushScalar(Kind::kInt, v);
}

bool Reader::PopMark(size_t* mark) {
  if (marks_.empty()) return FailOp(" without a MARK");
  *mark = marks_.back();
  marks_.pop_back();
  // APPEND, SETITEM or TUPLE1..3 may have taken values from below the MARK since it was set;
  // the mark then points past the stack (CPython refuses such a stream too).
  if (*mark > stack_.size()) {
    return Fail(std::string(Name()) +
                " after values below its MARK were taken (MARK at stack depth " +
                std::to_string(*mark) + ", stack now " + std::to_string(stack_.size()) + ")");
  }
  return true;
}

// The memo slot of `id`, or nullptr when nothing was stored under it.
inline Val* Reader::MemoSlot(uint64_t id) {
  if (id < memo_.size() && memo_[id].kind != kUnset) return &memo_[id];
  if (memo_far_.empty()) return nullptr;
  auto it = memo_far_.find(id);
  return it == memo_far_.end() ? nullptr : &it->second;
}

bool Reader::Memo(uint64_t id) {
  if (stack_.empty()) return FailOp(" on an empty stack");
  if (Val* slot = MemoSlot(id)) {
    *slot = stack_.back();
    return true;
  }
  if (memo_size_ >= limits_.max_elements) return Fail("memo larger than the element limit");
  ++memo_size_;
  if (id < memo_.size() || id <= memo_size_ + kMemoSlack) {
    if (id >= memo_.size())
      memo_.resize(std::max<size_t>(id + 1, memo_.size() * 2), Val{kUnset, 0, 0});
    memo_[id] = stack_.back();
  } else {
    memo_far_[id] = stack_.back();
  }
  return true;
}

inline bool Reader::Get(uint64_t id) {
  const Val* slot = MemoSlot(id);
  if (slot == nullptr) return FailMemoId(id);
  const Val v = *slot;
  // A scalar is copied: count it again, so that a million gets of one long string stay bounded.
  if (!IsNode(v) && !CountValue(ScalarBytes(v))) return false;
  return Push(v);
}

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

// One opcode at pos_. Sets *stopped at STOP.
inline bool Reader::ReadOne(bool* stopped) {
  op_offset_ = pos_;
  opcode_ = p_[pos_++];
  switch (opcode_) {
    case op::kProto: {
      uint8_t version = 0;
      if (!ReadLe(&version)) return false;
      if (version > 5) return Fail("unknown pickle protocol " + std::to_string(version));
      return true;
    }
    case op::kFrame: {
      // Protocol 4 framing only groups opcodes for buffered reading; the content is what counts.
      uint64_t length = 0;
      if (!ReadLe(&length)) return false;
      if (length > size_ - pos_)
        return Fail("FRAME of " + std::to_string(length) + " bytes, " +
                    std::to_string(size_ - pos_) + " left");
      return true;
    }
    case op::kStop:
      *stopped = true;
      return true;
    case op::kMark:
      if (marks_.size() >= limits_.max_depth)
        return Fail("more than " + std::to_string(limits_.max_depth) + " open MARKs (limit)");
      marks_.push_back(stack_.size());
      return true;
    case op::kNone:
      return PushScalar(Kind::kNone, 0);
    case op::kNewTrue:
      return PushScalar(Kind::kBool, 1);
    case op::kNewFalse:
      return PushScalar(Kind::kBool, 0);
    case op::kBinInt: {
      uint32_t v = 0;
      return ReadLe(&v) &&
             PushScalar(Kind::kInt, static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}));
    }
    case op::kBinInt1: {
      uint8_t v = 0;
      return ReadLe(&v) && PushScalar(Kind::kInt, v);
    }
    case op::kBinInt2: {
      uint16_t v = 0;
      return ReadLe(&v) && PushScalar(Kind::kInt, v);
    }
    case op::kLong1:
      return ReadLong1();
    case op::kBinFloat: {
      if (!Need(8)) return false;
      uint64_t bits = 0;
      for (size_t i = 0; i < 8; ++i) bits = (bits << 8) | p_[pos_ + i];  // big-endian
      pos_ += 8;
      return PushScalar(Kind::kFloat, bits);
    }
    case op::kShortBinUnicode:
    case op::kShortBinBytes: {
      uint8_t n = 0;
      return ReadLe(&n) && ReadString(n, opcode_ == op::kShortBinBytes);
    }
    case op::kBinUnicode:
    case op::kBinBytes: {
      uint32_t n = 0;
      return ReadLe(&n) && ReadString(n, opcode_ == op::kBinBytes);
    }
    case op::kBinUnicode8:
    case op::kBinBytes8: {
      uint64_t n = 0;
      return ReadLe(&n) && ReadString(n, opcode_ == op::kBinBytes8);
    }
    case op::kEmptyList:
      return PushNode(Kind::kList);
    case op::kEmptyDict:
      return PushNode(Kind::kDict);
    case op::kEmptyTuple:
      return PushNode(Kind::kTuple);
    case op::kAppend: {
      if (stack_.size() < 2) return Fail("APPEND needs a list and a value on the stack");
      size_t node = 0;
      if (!Target(stack_.size() - 2, Kind::kList, &node)) return false;
      const Val v = stack_.back();
      stack_.pop_back();
      return AppendItems(node, &v, 1);
    }
    case op::kAppends: {
      size_t mark = 0;
      if (!PopMark(&mark)) return false;
      if (mark == 0) return Fail("APPENDS without a list below its MARK");
      size_t node = 0;
      if (!Target(mark - 1, Kind::kList, &node)) return false;
      if (!AppendItems(node, stack_.data() + mark, stack_.size() - mark)) return false;
      stack_.resize(mark);
      return true;
    }
    case op::kSetItem: {
      if (stack_.size() < 3) return Fail("SETITEM needs a dict, a key and a value on the stack");
      size_t node = 0;
      if (!Target(stack_.size() - 3, Kind::kDict, &node)) return false;
      const Val pair[2] = {stack_[stack_.size() - 2], stack_.back()};
      stack_.resize(stack_.size() - 2);
      return SetItems(node, pair, 1);
    }
    case op::kSetItems: {
      size_t mark = 0;
      if (!PopMark(&mark)) return false;
      if (mark == 0) return Fail("SETITEMS without a dict below its MARK");
      if ((stack_.size() - mark) % 2 != 0) return Fail("SETITEMS with a key that has no value");
      size_t node = 0;
      if (!Target(mark - 1, Kind::kDict, &node)) return false;
      if (!SetItems(node, stack_.data() + mark, (stack_.size() - mark) / 2)) return false;
      stack_.resize(mark);
      return true;
    }
    case op::kTuple:
    case op::kTuple1:
    case op::kTuple2:
    case op::kTuple3: {
      size_t first = 0;
      if (opcode_ == op::kTuple) {
        if (!PopMark(&first)) return false;
      } else {
        const size_t n = opcode_ - op::kTuple1 + 1;
        if (stack_.size() < n)
          return Fail(std::string(Name()) + " needs " + std::to_string(n) + " values on the stack");
        first = stack_.size() - n;
      }
      // The tuple is counted after its items left the stack, so the stack has room for it.
      if (!CountValue(0)) return false;
      nodes_.emplace_back().kind = Kind::kTuple;
      const size_t node = nodes_.size() - 1;
      if (!AppendItems(node, stack_.data() + first, stack_.size() - first)) return false;
      stack_.resize(first);
      return Push(Val{Kind::kTuple, 0, node});
    }
    case op::kBinPut: {
      uint8_t id = 0;
      return ReadLe(&id) && Memo(id);
    }
    case op::kLongBinPut: {
      uint32_t id = 0;
      return ReadLe(&id) && Memo(id);
    }
    case op::kMemoize:
      // CPython numbers MEMOIZE entries by the memo's size (Unpickler.load_memoize).
      return Memo(static_cast<uint32_t>(memo_size_));
    case op::kBinGet: {
      uint8_t id = 0;
      return ReadLe(&id) && Get(id);
    }
    case op::kLongBinGet: {
      uint32_t id = 0;
      return ReadLe(&id) && Get(id);
    }
    case op::kLong4:
      return Fail("LONG4 integer does not fit in int64");
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", opcode_);
      if (Name() == nullptr) return Fail(std::string("unknown opcode ") + hex);
      return Fail(std::string("unsupported opcode ") + Name() + " (" + hex +
                  "): only plain data (None, bool, int, float, str, bytes, list, tuple, dict) "
                  "is read, nothing is built or called");
    }
  }
}

bool Reader::Run() {
  if (size_ > limits_.max_input_bytes) {
    return Fail("input of " + std::to_string(size_) + " bytes is larger than the limit of " +
                std::to_string(limits_.max_input_bytes));
  }
  out_->data = p_;
  nodes_.clear();
  items_.clear();
  stack_.clear();
  marks_.clear();
  memo_.clear();
  // A torch dump holds about one value per 4 bytes and one container per 40.
  items_.reserve(std::min<size_t>(size_ / 4, limits_.max_elements));
  nodes_.reserve(std::min<size_t>(size_ / 40, limits_.max_elements));
  bool stopped = false;
  while (!stopped) {
    if (pos_ >= size_) {
      op_offset_ = pos_;
      return Fail("truncated input: no STOP opcode");
    }
    if (!ReadOne(&stopped)) return false;
  }
  if (!marks_.empty())
    return Fail("STOP with " + std::to_string(marks_.size()) + " MARKs still open");
  if (stack_.size() != 1) {
    return Fail("STOP with " + std::to_string(stack_.size()) + " values on the stack instead of 1");
  }
  if (pos_ != size_) {
    op_offset_ = pos_;
    return Fail(std::to_string(size_ - pos_) + " bytes after STOP");
  }
  out_->root = stack_.back();
  return true;
}

}  // namespace

bool ReadPickle(const void* data, size_t size, const PickleLimits& limits, flat::FlatPickle* out,
                std::string* error) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  err->clear();
  out->owned_text.clear();
  return Reader(static_cast<const uint8_t*>(data), size, limits, out, err).Run();
}

std::optional<PickleValue> ParsePickle(const void* data, size_t size, const PickleLimits& limits,
                                       std::string* error) {
  flat::FlatPickle flat;
  if (!ReadPickle(data, size, limits, &flat, error)) return std::nullopt;
  return flat.Materialize(flat.root);
}

}  // namespace ncclscope::flight_recorder
