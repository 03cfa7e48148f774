#include "trace/flight_recorder/pickle_flat_reader.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "trace/flight_recorder/pickle_opcodes.h"
#include "trace/flight_recorder/utf8.h"

namespace ncclscope::flight_recorder::flat {

namespace {

// A memo id beyond this many past the ids stored so far is declined rather than making a sparse
// table (torch and CPython number the memo densely from 0).
constexpr uint64_t kMemoSlack = 4096;
// A memo slot that holds nothing: a kind no value has.
constexpr Kind kUnset = static_cast<Kind>(255);

// Each step mirrors the same opcode in pickle_reader.cpp; a `false` return declines.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const PickleLimits& limits, FlatPickle* out)
      : p_(data),
        size_(size),
        limits_(limits),
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

  FlatRead Run(std::string* error);

 private:
  template <typename T>
  bool ReadLe(T* v) {
    if (sizeof(T) > size_ - pos_) return false;
    T x = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      x |= static_cast<T>(static_cast<T>(p_[pos_ + i]) << (8 * i));
    pos_ += sizeof(T);
    *v = x;
    return true;
  }
  bool CountValue(uint64_t bytes) {
    values_made_ += 1;
    bytes_made_ += bytes;
    return values_made_ <= limits_.max_elements && bytes_made_ <= limits_.max_string_bytes;
  }
  bool Push(const Val& v) {
    if (stack_.size() >= limits_.max_elements) return false;
    stack_.push_back(v);
    return true;
  }
  bool PushScalar(Kind kind, uint64_t bits) { return CountValue(0) && Push(Val{kind, 0, bits}); }
  bool PushNode(Kind kind) {
    if (!CountValue(0)) return false;
    nodes_.emplace_back().kind = kind;
    return Push(Val{kind, 0, nodes_.size() - 1});
  }
  static uint64_t BytesOf(const Val& v) {
    return v.kind == Kind::kStr || v.kind == Kind::kBytes ? v.len : 0;
  }
  static bool IsNode(const Val& v) {
    return v.kind == Kind::kList || v.kind == Kind::kTuple || v.kind == Kind::kDict;
  }

  bool ReadString(uint64_t length, bool is_bytes);
  bool ReadLong1();
  bool ReadOne(bool* stopped);
  bool PopMark(size_t* mark);
  bool Memo(uint64_t id);
  bool Get(uint64_t id);
  bool Target(size_t position, Kind kind, size_t* node);
  bool Insert(size_t node, const Val* first, size_t n);

  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  uint8_t opcode_ = 0;
  const PickleLimits& limits_;
  FlatPickle* out_;
  std::vector<Node> nodes_;
  std::vector<Val> items_;
  std::vector<Val> stack_;
  std::vector<size_t> marks_;
  std::vector<Val> memo_;  // kUnset where no value was stored
  size_t memo_size_ = 0;
  uint64_t values_made_ = 0;
  uint64_t bytes_made_ = 0;
  uint64_t relocated_ = 0;
  bool refused_ = false;
  std::string refusal_;
};

bool Reader::ReadString(uint64_t length, bool is_bytes) {
  if (length > size_ - pos_ || length > UINT32_MAX) return false;
  const Val v{is_bytes ? Kind::kBytes : Kind::kStr, static_cast<uint32_t>(length), pos_};
  if (!is_bytes) {
    size_t bad = 0;
    if (!IsUtf8AllowingSurrogates({reinterpret_cast<const char*>(p_ + pos_), length}, &bad))
      return false;
  }
  pos_ += length;
  return CountValue(length) && Push(v);
}

// As pickle_reader.cpp's ReadLong1: n little-endian two's complement bytes that fit int64.
bool Reader::ReadLong1() {
  uint8_t n = 0;
  if (!ReadLe(&n) || n > size_ - pos_) return false;
  const uint8_t* b = p_ + pos_;
  pos_ += n;
  const bool negative = n > 0 && (b[n - 1] & 0x80) != 0;
  for (size_t i = 8; i < n; ++i) {
    if (b[i] != (negative ? 0xff : 0x00)) return false;
  }
  if (n > 8 && ((b[7] & 0x80) != 0) != negative) return false;
  uint64_t v = negative ? ~uint64_t{0} : 0;
  for (size_t i = 0; i < n && i < 8; ++i) {
    v &= ~(uint64_t{0xff} << (8 * i));
    v |= uint64_t{b[i]} << (8 * i);
  }
  return PushScalar(Kind::kInt, v);
}

bool Reader::PopMark(size_t* mark) {
  if (marks_.empty()) return false;
  *mark = marks_.back();
  marks_.pop_back();
  if (*mark > stack_.size()) {
    refused_ = true;
    refusal_ = std::string("pickle: ") + op::OpcodeName(opcode_) +
               " after values below its MARK were taken (MARK at stack depth " +
               std::to_string(*mark) + ", stack now " + std::to_string(stack_.size()) +
               ") at offset " + std::to_string(pos_ - 1);
    return false;
  }
  return true;
}

bool Reader::Memo(uint64_t id) {
  if (stack_.empty()) return false;
  if (id >= memo_.size()) {
    if (id > memo_size_ + kMemoSlack) return false;
    memo_.resize(std::max<size_t>(id + 1, memo_.size() * 2), Val{kUnset, 0, 0});
  }
  if (memo_[id].kind == kUnset) {
    if (memo_size_ >= limits_.max_elements) return false;
    ++memo_size_;
  }
  memo_[id] = stack_.back();
  return true;
}

bool Reader::Get(uint64_t id) {
  if (id >= memo_.size() || memo_[id].kind == kUnset) return false;
  const Val v = memo_[id];
  if (!IsNode(v) && !CountValue(BytesOf(v))) return false;
  return Push(v);
}

bool Reader::Target(size_t position, Kind kind, size_t* node) {
  const Val& t = stack_[position];
  if (t.kind != kind || nodes_[t.bits].inside_another) return false;
  *node = t.bits;
  return true;
}

// Appends n values (dicts: n/2 key, value pairs) to `node`, checking as ParsePickle's Insert.
// The node's slice moves to the end of the array when something was appended after it; the
// total moved is bounded by the input size, so a stream built to move it often is declined.
bool Reader::Insert(size_t node, const Val* first, size_t n) {
  std::vector<Node>& nodes = nodes_;
  const bool dict = nodes[node].kind == Kind::kDict;
  // Summed first and checked per value: counts only grow here, so the sums stay within the
  // limits exactly when ParsePickle's value by value additions do.
  uint64_t elements = nodes[node].elements;
  uint64_t bytes = nodes[node].bytes;
  uint32_t height = nodes[node].height;
  for (size_t i = 0; i < n; ++i) {
    const Val& v = first[i];
    const bool key = dict && i % 2 == 0;
    if (IsNode(v)) {
      if (key || v.bits == node) return false;
      Node& child = nodes[v.bits];
      child.inside_another = true;
      elements += child.elements;
      bytes += child.bytes;
      height = std::max(height, child.height + 1);
    } else {
      if (key && v.kind != Kind::kStr && v.kind != Kind::kInt) return false;
      elements += 1;
      bytes += BytesOf(v);
    }
    if (elements > limits_.max_elements || bytes > limits_.max_string_bytes) return false;
  }
  if (height > limits_.max_depth) return false;
  std::vector<Val>& items = items_;
  Node& parent = nodes[node];
  parent.elements = elements;
  parent.bytes = bytes;
  parent.height = height;
  if (parent.count == 0) {
    parent.begin = items.size();
  } else if (parent.begin + parent.count != items.size()) {
    relocated_ += parent.count;
    if (relocated_ > size_) return false;
    const size_t from = parent.begin;
    parent.begin = items.size();
    items.reserve(items.size() + parent.count + n);
    for (size_t i = 0; i < parent.count; ++i) items.push_back(items[from + i]);
  }
  items.insert(items.end(), first, first + n);
  parent.count += n;
  return true;
}

bool Reader::ReadOne(bool* stopped) {
  opcode_ = p_[pos_++];
  switch (opcode_) {
    case op::kProto: {
      uint8_t version = 0;
      return ReadLe(&version) && version <= 5;
    }
    case op::kFrame: {
      uint64_t length = 0;
      return ReadLe(&length) && length <= size_ - pos_;
    }
    case op::kStop:
      *stopped = true;
      return true;
    case op::kMark:
      if (marks_.size() >= limits_.max_depth) return false;
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
      if (size_ - pos_ < 8) return false;
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
      size_t node = 0;
      if (stack_.size() < 2 || !Target(stack_.size() - 2, Kind::kList, &node)) return false;
      const Val v = stack_.back();
      stack_.pop_back();
      return Insert(node, &v, 1);
    }
    case op::kAppends: {
      size_t mark = 0;
      size_t node = 0;
      if (!PopMark(&mark) || mark == 0 || !Target(mark - 1, Kind::kList, &node)) return false;
      if (!Insert(node, stack_.data() + mark, stack_.size() - mark)) return false;
      stack_.resize(mark);
      return true;
    }
    case op::kSetItem: {
      size_t node = 0;
      if (stack_.size() < 3 || !Target(stack_.size() - 3, Kind::kDict, &node)) return false;
      const Val pair[2] = {stack_[stack_.size() - 2], stack_.back()};
      stack_.resize(stack_.size() - 2);
      return Insert(node, pair, 2);
    }
    case op::kSetItems: {
      size_t mark = 0;
      size_t node = 0;
      if (!PopMark(&mark) || mark == 0 || (stack_.size() - mark) % 2 != 0 ||
          !Target(mark - 1, Kind::kDict, &node)) {
        return false;
      }
      if (!Insert(node, stack_.data() + mark, stack_.size() - mark)) return false;
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
        if (stack_.size() < n) return false;
        first = stack_.size() - n;
      }
      const size_t n = stack_.size() - first;
      // ParsePickle counts and pushes the tuple after taking its items off the stack.
      if (!CountValue(0)) return false;
      nodes_.emplace_back().kind = Kind::kTuple;
      const size_t node = nodes_.size() - 1;
      if (!Insert(node, stack_.data() + first, n)) return false;
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
      return Memo(static_cast<uint32_t>(memo_size_));
    case op::kBinGet: {
      uint8_t id = 0;
      return ReadLe(&id) && Get(id);
    }
    case op::kLongBinGet: {
      uint32_t id = 0;
      return ReadLe(&id) && Get(id);
    }
    default:
      return false;
  }
}

FlatRead Reader::Run(std::string* error) {
  if (size_ > limits_.max_input_bytes) return FlatRead::kDeclined;
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
    if (pos_ >= size_ || !ReadOne(&stopped)) {
      if (!refused_) return FlatRead::kDeclined;
      *error = refusal_;
      return FlatRead::kRefused;
    }
  }
  if (!marks_.empty() || stack_.size() != 1 || pos_ != size_) return FlatRead::kDeclined;
  out_->root = stack_.back();
  return FlatRead::kRead;
}

PickleValue MaterializeDict(const FlatPickle& p, std::span<const Val> items);

PickleValue MaterializeOne(const FlatPickle& p, const Val& v) {
  switch (v.kind) {
    case Kind::kNone:
      return PickleValue::None();
    case Kind::kBool:
      return PickleValue(v.bits != 0);
    case Kind::kInt:
      return PickleValue(static_cast<int64_t>(v.bits));
    case Kind::kFloat: {
      double d;
      std::memcpy(&d, &v.bits, sizeof(d));
      return PickleValue(d);
    }
    case Kind::kStr:
      return PickleValue(std::string(p.Str(v)));
    case Kind::kBytes:
      return PickleValue(PickleBytes{std::string(p.Str(v))});
    case Kind::kList:
    case Kind::kTuple: {
      std::vector<PickleValue> values;
      values.reserve(p.NodeOf(v).count);
      for (const Val& child : p.Items(v)) values.push_back(MaterializeOne(p, child));
      if (v.kind == Kind::kList) return PickleList{std::move(values)};
      return PickleTuple{std::move(values)};
    }
    case Kind::kDict:
      return MaterializeDict(p, p.Items(v));
  }
  return PickleValue::None();
}

// As ParsePickle's Insert: a repeated key keeps its first place and takes the last value.
PickleValue MaterializeDict(const FlatPickle& p, std::span<const Val> items) {
  constexpr size_t kLinearKeySearch = 16;
  PickleDict dict;
  dict.items.reserve(items.size() / 2);
  std::unique_ptr<std::map<PickleKey, size_t>> index;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    PickleKey key;
    if (items[i].kind == Kind::kStr) {
      key = std::string(p.Str(items[i]));
    } else {
      key = static_cast<int64_t>(items[i].bits);
    }
    size_t found = dict.items.size();
    if (!index) {
      for (size_t k = 0; k < dict.items.size(); ++k) {
        if (dict.items[k].first == key) found = k;
      }
    } else if (auto it = index->find(key); it != index->end()) {
      found = it->second;
    }
    PickleValue value = MaterializeOne(p, items[i + 1]);
    if (found < dict.items.size()) {
      dict.items[found].second = std::move(value);
      continue;
    }
    if (!index && dict.items.size() == kLinearKeySearch) {
      index = std::make_unique<std::map<PickleKey, size_t>>();
      for (size_t k = 0; k < dict.items.size(); ++k) index->emplace(dict.items[k].first, k);
    }
    if (index) index->emplace(key, dict.items.size());
    dict.items.emplace_back(std::move(key), std::move(value));
  }
  return dict;
}

}  // namespace

PickleValue FlatPickle::Materialize(const Val& v) const {
  return MaterializeOne(*this, v);
}

FlatRead ReadFlatPickle(const void* data, size_t size, const PickleLimits& limits, FlatPickle* out,
                        std::string* error) {
  return Reader(static_cast<const uint8_t*>(data), size, limits, out).Run(error);
}

}  // namespace ncclscope::flight_recorder::flat
