#include "trace/flight_recorder/pickle_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "trace/flight_recorder/pickle_opcodes.h"
#include "trace/flight_recorder/utf8.h"

namespace ncclscope::flight_recorder {

namespace {

// A value on the stack or in the memo: a scalar held by value (immutable, so a copy is the same
// value), or a container in the arena by index (shared: CPython memoizes a list before filling
// it, so a later BINGET must see the filled list).
struct Item {
  PickleValue scalar;
  int64_t node = -1;
};

// A list, tuple or dict being built. `elements`, `bytes` and `height` describe the expanded
// subtree; they stay exact because only a container that sits in no other may change.
struct Node {
  PickleValue::Kind kind = PickleValue::Kind::kList;
  std::vector<Item> items;                             // list and tuple items; dict values
  std::vector<PickleKey> keys;                         // dict keys, parallel to items
  std::unique_ptr<std::map<PickleKey, size_t>> index;  // key -> position, once not tiny
  bool inside_another = false;
  size_t uses = 0;  // containers it was put into; above 1 it is materialized by copy
  uint64_t elements = 1;
  uint64_t bytes = 0;
  size_t height = 1;
};

constexpr size_t kLinearKeySearch = 16;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const PickleLimits& limits, std::string* error)
      : p_(data), size_(size), limits_(limits), error_(error) {}

  std::optional<PickleValue> Run();

 private:
  bool Fail(const std::string& what) {
    *error_ = "pickle: " + what + " at offset " + std::to_string(op_offset_);
    return false;
  }
  const char* Name() const { return op::OpcodeName(opcode_); }

  bool Need(uint64_t n) {
    if (n <= size_ - pos_) return true;
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

  bool CountValue(uint64_t bytes) {
    values_made_ += 1;
    bytes_made_ += bytes;
    if (values_made_ > limits_.max_elements)
      return Fail("more than " + std::to_string(limits_.max_elements) + " values (limit)");
    if (bytes_made_ > limits_.max_string_bytes)
      return Fail("more than " + std::to_string(limits_.max_string_bytes) +
                  " bytes of strings (limit)");
    return true;
  }
  bool Push(Item item) {
    if (stack_.size() >= limits_.max_elements) return Fail("stack deeper than the element limit");
    stack_.push_back(std::move(item));
    return true;
  }
  bool PushScalar(PickleValue v, uint64_t bytes) {
    if (!CountValue(bytes)) return false;
    return Push(Item{std::move(v), -1});
  }
  bool PushNode(PickleValue::Kind kind) {
    if (!CountValue(0)) return false;
    nodes_.emplace_back().kind = kind;
    return Push(Item{PickleValue(), static_cast<int64_t>(nodes_.size() - 1)});
  }

  bool ReadString(uint64_t length, bool is_bytes);
  bool ReadLong1();
  bool ReadOne(bool* stopped);
  bool PopMark(size_t* mark);
  bool Memo(uint32_t id);
  bool Get(uint32_t id);
  bool Target(size_t position, PickleValue::Kind kind, size_t* node);
  bool Insert(size_t node, Item child, Item* key);
  void Reserve(size_t node, size_t more);
  bool AddToCounts(Node& parent, const Item& child);
  uint64_t ElementsOf(const Item& i) const { return i.node >= 0 ? nodes_[i.node].elements : 1; }
  uint64_t BytesOf(const Item& i) const;
  size_t HeightOf(const Item& i) const { return i.node >= 0 ? nodes_[i.node].height : 0; }
  PickleValue Take(Item& item);
  PickleValue Copy(const Item& item) const;
  PickleValue Build(const Node& n, std::vector<PickleValue> values) const;

  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  uint8_t opcode_ = 0;
  const PickleLimits& limits_;
  std::string* error_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Item> memo_;
  std::vector<Node> nodes_;
  uint64_t values_made_ = 0;
  uint64_t bytes_made_ = 0;
};

uint64_t Reader::BytesOf(const Item& i) const {
  if (i.node >= 0) return nodes_[i.node].bytes;
  if (const auto* s = i.scalar.AsStr()) return s->size();
  if (const auto* b = i.scalar.AsBytes()) return b->data.size();
  return 0;
}

bool Reader::ReadString(uint64_t length, bool is_bytes) {
  if (!Need(length)) return false;
  std::string text(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(length));
  pos_ += static_cast<size_t>(length);
  if (is_bytes) return PushScalar(PickleBytes{std::move(text)}, length);
  // Python decodes with 'surrogatepass'; anything else that is not UTF-8 fails there too.
  if (size_t bad = 0; !IsUtf8AllowingSurrogates(text, &bad))
    return Fail("str is not UTF-8 (byte " + std::to_string(bad) + " of the string)");
  return PushScalar(PickleValue(std::move(text)), length);
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
  return PushScalar(PickleValue(static_cast<int64_t>(v)), 0);
}

bool Reader::PopMark(size_t* mark) {
  if (marks_.empty()) return Fail(std::string(Name()) + " without a MARK");
  *mark = marks_.back();
  marks_.pop_back();
  // APPEND, SETITEM or TUPLE1..3 may have taken values from below the MARK since it was set;
  // the mark then points past the stack (CPython refuses such a stream too).
  if (*mark > stack_.size()) {
    return Fail(std::string(Name()) + " after values below its MARK were taken");
  }
  return true;
}

bool Reader::Memo(uint32_t id) {
  if (stack_.empty()) return Fail(std::string(Name()) + " on an empty stack");
  if (memo_.size() >= limits_.max_elements && memo_.find(id) == memo_.end())
    return Fail("memo larger than the element limit");
  memo_[id] = stack_.back();
  return true;
}

bool Reader::Get(uint32_t id) {
  auto it = memo_.find(id);
  if (it == memo_.end()) return Fail("memo id " + std::to_string(id) + " was never stored");
  const Item& item = it->second;
  // A scalar is copied: count it again, so that a million gets of one long string stay bounded.
  if (item.node < 0 && !CountValue(BytesOf(item))) return false;
  Item copy = item;
  return Push(std::move(copy));
}

// The container of `kind` at stack position `position`, which may still change.
bool Reader::Target(size_t position, PickleValue::Kind kind, size_t* node) {
  const Item& t = stack_[position];
  if (t.node < 0 || nodes_[t.node].kind != kind) {
    const PickleValue::Kind got = t.node >= 0 ? nodes_[t.node].kind : t.scalar.kind();
    return Fail(std::string(Name()) + " into a " + PickleKindName(got) + ", not a " +
                PickleKindName(kind));
  }
  if (nodes_[t.node].inside_another)
    return Fail(std::string(Name()) + " into a " + PickleKindName(kind) +
                " that is already inside another container");
  *node = static_cast<size_t>(t.node);
  return true;
}

bool Reader::AddToCounts(Node& parent, const Item& child) {
  parent.elements += ElementsOf(child);
  parent.bytes += BytesOf(child);
  parent.height = std::max(parent.height, HeightOf(child) + 1);
  if (parent.elements > limits_.max_elements)
    return Fail("a container expands to more than " + std::to_string(limits_.max_elements) +
                " values (limit; memo references count each time)");
  if (parent.bytes > limits_.max_string_bytes)
    return Fail("a container expands to more than " + std::to_string(limits_.max_string_bytes) +
                " bytes of strings (limit)");
  if (parent.height > limits_.max_depth)
    return Fail("containers nested deeper than " + std::to_string(limits_.max_depth) + " (limit)");
  return true;
}

// Puts `child` into the list, tuple or dict `node` (under `key` for a dict). A container child
// is marked as inside another, after which it can no longer change: with that, and no container
// put into itself, no container can ever reach itself (the last edge closing a cycle would have
// to modify a container that is already inside another).
bool Reader::Insert(size_t node, Item child, Item* key) {
  if (child.node >= 0) {
    if (static_cast<size_t>(child.node) == node)
      return Fail(std::string(Name()) + " would put a container into itself");
    nodes_[child.node].inside_another = true;
    nodes_[child.node].uses += 1;
  }
  Node& parent = nodes_[node];
  if (key == nullptr) {
    if (!AddToCounts(parent, child)) return false;
    parent.items.push_back(std::move(child));
    return true;
  }
  const uint64_t key_bytes = BytesOf(*key);
  PickleKey k;
  if (std::string* s = key->node < 0 ? key->scalar.AsStr() : nullptr) {
    k = std::move(*s);
  } else if (const auto* i = key->node < 0 ? key->scalar.AsInt() : nullptr) {
    k = *i;
  } else {
    const PickleValue::Kind kind = key->node >= 0 ? nodes_[key->node].kind : key->scalar.kind();
    return Fail(std::string("dict key of type ") + PickleKindName(kind) + " (only str and int)");
  }
  // Python keeps a repeated key at its first position with the last value.
  size_t found = parent.keys.size();
  if (parent.keys.size() <= kLinearKeySearch) {
    for (size_t i = 0; i < parent.keys.size(); ++i) {
      if (parent.keys[i] == k) found = i;
    }
  } else if (auto it = parent.index->find(k); it != parent.index->end()) {
    found = it->second;
  }
  if (found < parent.keys.size()) {
    Item& old = parent.items[found];
    parent.elements -= ElementsOf(old);
    parent.bytes -= BytesOf(old);
    // The height may only shrink here; keeping the larger one errs on the safe side.
    if (!AddToCounts(parent, child)) return false;
    old = std::move(child);
    return true;
  }
  // The key counts as a value of the expanded tree too.
  parent.elements += 1;
  parent.bytes += key_bytes;
  if (!AddToCounts(parent, child)) return false;
  if (parent.keys.size() == kLinearKeySearch) {
    parent.index = std::make_unique<std::map<PickleKey, size_t>>();
    for (size_t i = 0; i < parent.keys.size(); ++i) parent.index->emplace(parent.keys[i], i);
  }
  if (parent.index) parent.index->emplace(k, parent.keys.size());
  parent.keys.push_back(std::move(k));
  parent.items.push_back(std::move(child));
  return true;
}

// Room for `more` items, which are on the stack already (so the input paid for them).
void Reader::Reserve(size_t node, size_t more) {
  Node& n = nodes_[node];
  n.items.reserve(n.items.size() + more);
  if (n.kind == PickleValue::Kind::kDict) n.keys.reserve(n.keys.size() + more);
}

// One opcode at pos_. Sets *stopped at STOP.
bool Reader::ReadOne(bool* stopped) {
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
      return PushScalar(PickleValue::None(), 0);
    case op::kNewTrue:
      return PushScalar(PickleValue(true), 0);
    case op::kNewFalse:
      return PushScalar(PickleValue(false), 0);
    case op::kBinInt: {
      uint32_t v = 0;
      if (!ReadLe(&v)) return false;
      return PushScalar(PickleValue(int64_t{static_cast<int32_t>(v)}), 0);
    }
    case op::kBinInt1: {
      uint8_t v = 0;
      if (!ReadLe(&v)) return false;
      return PushScalar(PickleValue(int64_t{v}), 0);
    }
    case op::kBinInt2: {
      uint16_t v = 0;
      if (!ReadLe(&v)) return false;
      return PushScalar(PickleValue(int64_t{v}), 0);
    }
    case op::kLong1:
      return ReadLong1();
    case op::kBinFloat: {
      if (!Need(8)) return false;
      uint64_t bits = 0;
      for (size_t i = 0; i < 8; ++i) bits = (bits << 8) | p_[pos_ + i];  // big-endian
      pos_ += 8;
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      return PushScalar(PickleValue(d), 0);
    }
    case op::kShortBinUnicode:
    case op::kShortBinBytes: {
      uint8_t n = 0;
      if (!ReadLe(&n)) return false;
      return ReadString(n, opcode_ == op::kShortBinBytes);
    }
    case op::kBinUnicode:
    case op::kBinBytes: {
      uint32_t n = 0;
      if (!ReadLe(&n)) return false;
      return ReadString(n, opcode_ == op::kBinBytes);
    }
    case op::kBinUnicode8:
    case op::kBinBytes8: {
      uint64_t n = 0;
      if (!ReadLe(&n)) return false;
      return ReadString(n, opcode_ == op::kBinBytes8);
    }
    case op::kEmptyList:
      return PushNode(PickleValue::Kind::kList);
    case op::kEmptyDict:
      return PushNode(PickleValue::Kind::kDict);
    case op::kEmptyTuple:
      return PushNode(PickleValue::Kind::kTuple);
    case op::kAppend: {
      if (stack_.size() < 2) return Fail("APPEND needs a list and a value on the stack");
      size_t node = 0;
      if (!Target(stack_.size() - 2, PickleValue::Kind::kList, &node)) return false;
      Item value = std::move(stack_.back());
      stack_.pop_back();
      return Insert(node, std::move(value), nullptr);
    }
    case op::kAppends: {
      size_t mark = 0;
      if (!PopMark(&mark)) return false;
      if (mark == 0) return Fail("APPENDS without a list below its MARK");
      size_t node = 0;
      if (!Target(mark - 1, PickleValue::Kind::kList, &node)) return false;
      Reserve(node, stack_.size() - mark);
      for (size_t i = mark; i < stack_.size(); ++i) {
        if (!Insert(node, std::move(stack_[i]), nullptr)) return false;
      }
      stack_.resize(mark);
      return true;
    }
    case op::kSetItem: {
      if (stack_.size() < 3) return Fail("SETITEM needs a dict, a key and a value on the stack");
      size_t node = 0;
      if (!Target(stack_.size() - 3, PickleValue::Kind::kDict, &node)) return false;
      Item value = std::move(stack_.back());
      stack_.pop_back();
      Item key = std::move(stack_.back());
      stack_.pop_back();
      return Insert(node, std::move(value), &key);
    }
    case op::kSetItems: {
      size_t mark = 0;
      if (!PopMark(&mark)) return false;
      if (mark == 0) return Fail("SETITEMS without a dict below its MARK");
      if ((stack_.size() - mark) % 2 != 0) return Fail("SETITEMS with a key that has no value");
      size_t node = 0;
      if (!Target(mark - 1, PickleValue::Kind::kDict, &node)) return false;
      Reserve(node, (stack_.size() - mark) / 2);
      for (size_t i = mark; i < stack_.size(); i += 2) {
        if (!Insert(node, std::move(stack_[i + 1]), &stack_[i])) return false;
      }
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
      std::vector<Item> items(std::make_move_iterator(stack_.begin() + first),
                              std::make_move_iterator(stack_.end()));
      stack_.resize(first);
      if (!PushNode(PickleValue::Kind::kTuple)) return false;
      const size_t node = static_cast<size_t>(stack_.back().node);
      Reserve(node, items.size());
      for (Item& item : items) {
        if (!Insert(node, std::move(item), nullptr)) return false;
      }
      return true;
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
      return Memo(static_cast<uint32_t>(memo_.size()));
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

// The result tree: a container used once is moved out of the arena, one used more often (a
// memo reference) is copied for each use.
PickleValue Reader::Take(Item& item) {
  if (item.node < 0) return std::move(item.scalar);
  Node& n = nodes_[item.node];
  if (n.uses > 1) return Copy(item);
  std::vector<PickleValue> values;
  values.reserve(n.items.size());
  for (Item& child : n.items) values.push_back(Take(child));
  return Build(n, std::move(values));
}

PickleValue Reader::Copy(const Item& item) const {
  if (item.node < 0) return item.scalar;
  const Node& n = nodes_[item.node];
  std::vector<PickleValue> values;
  values.reserve(n.items.size());
  for (const Item& child : n.items) values.push_back(Copy(child));
  return Build(n, std::move(values));
}

PickleValue Reader::Build(const Node& n, std::vector<PickleValue> values) const {
  if (n.kind == PickleValue::Kind::kList) return PickleList{std::move(values)};
  if (n.kind == PickleValue::Kind::kTuple) return PickleTuple{std::move(values)};
  PickleDict dict;
  dict.items.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    dict.items.emplace_back(n.keys[i], std::move(values[i]));
  return dict;
}

std::optional<PickleValue> Reader::Run() {
  if (size_ > limits_.max_input_bytes) {
    Fail("input of " + std::to_string(size_) + " bytes is larger than the limit of " +
         std::to_string(limits_.max_input_bytes));
    return std::nullopt;
  }
  bool stopped = false;
  while (!stopped) {
    if (pos_ >= size_) {
      op_offset_ = pos_;
      Fail("truncated input: no STOP opcode");
      return std::nullopt;
    }
    if (!ReadOne(&stopped)) return std::nullopt;
  }
  if (!marks_.empty()) {
    Fail("STOP with " + std::to_string(marks_.size()) + " MARKs still open");
    return std::nullopt;
  }
  if (stack_.size() != 1) {
    Fail("STOP with " + std::to_string(stack_.size()) + " values on the stack instead of 1");
    return std::nullopt;
  }
  if (pos_ != size_) {
    op_offset_ = pos_;
    Fail(std::to_string(size_ - pos_) + " bytes after STOP");
    return std::nullopt;
  }
  return Take(stack_.back());
}

}  // namespace

std::optional<PickleValue> ParsePickle(const void* data, size_t size, const PickleLimits& limits,
                                       std::string* error) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  err->clear();
  return Reader(static_cast<const uint8_t*>(data), size, limits, err).Run();
}

}  // namespace ncclscope::flight_recorder
