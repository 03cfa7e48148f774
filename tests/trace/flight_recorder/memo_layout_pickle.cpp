#include "tests/trace/flight_recorder/memo_layout_pickle.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

#include "trace/flight_recorder/pickle_opcodes.h"

namespace ncclscope::flight_recorder::testing {

namespace {

class Writer {
 public:
  Writer(MemoLayout layout, bool share_lists) : layout_(layout), share_lists_(share_lists) {}

  std::string Finish(const PickleValue& v) {
    Op(op::kProto);
    Op(2);
    Value(v);
    Op(op::kStop);
    return std::move(out_);
  }

 private:
  void Op(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void Le32(uint32_t v) {
    for (int i = 0; i < 4; ++i) Op(static_cast<uint8_t>(v >> (8 * i)));
  }
  void Put() {
    Op(op::kLongBinPut);
    Le32(next_++);
  }
  void GetId(uint32_t id) {
    Op(op::kLongBinGet);
    Le32(id);
  }
  void Int(int64_t n) {
    if (n >= INT32_MIN && n <= INT32_MAX) {
      Op(op::kBinInt);
      Le32(static_cast<uint32_t>(n));
      return;
    }
    Op(op::kLong1);
    Op(8);
    for (int i = 0; i < 8; ++i) Op(static_cast<uint8_t>(static_cast<uint64_t>(n) >> (8 * i)));
  }
  void Str(const std::string& s) {
    if (auto it = strings_.find(s); it != strings_.end()) return GetId(it->second);
    Op(op::kBinUnicode);
    Le32(static_cast<uint32_t>(s.size()));
    out_ += s;
    strings_[s] = next_;
    Put();
  }
  void Value(const PickleValue& v) {
    const bool shareable = v.kind() == PickleValue::Kind::kDict ||
                           (share_lists_ && v.kind() == PickleValue::Kind::kList);
    std::string text;
    if (shareable) {
      text = DescribePickleValue(v);
      if (auto it = containers_.find(text); it != containers_.end()) return GetId(it->second);
    }
    switch (v.kind()) {
      case PickleValue::Kind::kNone:
        return Op(op::kNone);
      case PickleValue::Kind::kBool:
        return Op(*v.AsBool() ? op::kNewTrue : op::kNewFalse);
      case PickleValue::Kind::kInt:
        return Int(*v.AsInt());
      case PickleValue::Kind::kFloat: {
        uint64_t bits;
        std::memcpy(&bits, v.AsFloat(), 8);
        Op(op::kBinFloat);
        for (int i = 7; i >= 0; --i) Op(static_cast<uint8_t>(bits >> (8 * i)));
        return;
      }
      case PickleValue::Kind::kStr:
        return Str(*v.AsStr());
      case PickleValue::Kind::kBytes:
        Op(op::kBinBytes);
        Le32(static_cast<uint32_t>(v.AsBytes()->data.size()));
        out_ += v.AsBytes()->data;
        return;
      case PickleValue::Kind::kTuple:
        Op(op::kMark);
        for (const PickleValue& item : v.AsTuple()->items) Value(item);
        return Op(op::kTuple);
      case PickleValue::Kind::kList:
      case PickleValue::Kind::kDict:
        break;
    }
    const bool dict = v.kind() == PickleValue::Kind::kDict;
    Op(dict ? op::kEmptyDict : op::kEmptyList);
    const uint32_t id = next_;
    if (shareable && layout_ == MemoLayout::kCPython) Put();
    // torch writes one MARK ... APPENDS/SETITEMS; CPython batches of 1000 (pickle.py,
    // _batch_appends: a batch of one is APPEND/SETITEM, none writes nothing).
    const size_t n = dict ? v.AsDict()->items.size() : v.AsList()->items.size();
    const size_t batch = layout_ == MemoLayout::kTorch ? n + 1 : 1000;
    for (size_t start = 0; start < n || (start == 0 && layout_ == MemoLayout::kTorch);
         start += batch) {
      const size_t end = std::min(n, start + batch);
      const bool single = layout_ == MemoLayout::kCPython && end - start == 1;
      if (!single) Op(op::kMark);
      for (size_t i = start; i < end; ++i) {
        if (dict) {
          const auto& [key, value] = v.AsDict()->items[i];
          if (const auto* s = std::get_if<std::string>(&key)) {
            Str(*s);
          } else {
            Int(std::get<int64_t>(key));
          }
          Value(value);
        } else {
          Value(v.AsList()->items[i]);
        }
      }
      if (single) {
        Op(dict ? op::kSetItem : op::kAppend);
      } else {
        Op(dict ? op::kSetItems : op::kAppends);
      }
    }
    if (!shareable) return;
    if (layout_ == MemoLayout::kTorch) {
      containers_[text] = next_;
      Put();
    } else {
      containers_[text] = id;
    }
  }

  const MemoLayout layout_;
  const bool share_lists_;
  std::string out_;
  uint32_t next_ = 0;
  std::map<std::string, uint32_t> strings_;
  std::map<std::string, uint32_t> containers_;
};

}  // namespace

std::string WriteMemoLayoutPickle(const PickleValue& value, MemoLayout layout, bool share_lists) {
  return Writer(layout, share_lists).Finish(value);
}

}  // namespace ncclscope::flight_recorder::testing
