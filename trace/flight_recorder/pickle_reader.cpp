#include "trace/flight_recorder/pickle_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trace/flight_recorder/pickle_opcodes.h"
#include "trace/flight_recorder/pickle_reader_state.h"
#include "trace/flight_recorder/utf8.h"

namespace ncclscope::flight_recorder {

namespace pickle_detail {

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

}  // namespace pickle_detail

bool ReadPickle(const void* data, size_t size, const PickleLimits& limits, flat::FlatPickle* out,
                std::string* error) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  err->clear();
  out->owned_text.clear();
  return pickle_detail::Reader(static_cast<const uint8_t*>(data), size, limits, out, err).Run();
}

std::optional<PickleValue> ParsePickle(const void* data, size_t size, const PickleLimits& limits,
                                       std::string* error) {
  flat::FlatPickle flat;
  if (!ReadPickle(data, size, limits, &flat, error)) return std::nullopt;
  return flat.Materialize(flat.root);
}

}  // namespace ncclscope::flight_recorder