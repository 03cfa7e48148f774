#include "trace/flight_recorder/pickle_writer.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/flight_recorder/pickle_opcodes.h"

namespace ncclscope::flight_recorder {

namespace {

class Writer {
 public:
  std::string Finish(const PickleValue& value) {
    Op(op::kProto);
    Op(2);
    Value(value);
    Op(op::kStop);
    return std::move(out_);
  }

 private:
  void Op(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  template <typename T>
  void Le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
      Op(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }

  void Int(int64_t n) {
    if (n >= 0 && n <= std::numeric_limits<uint8_t>::max()) {
      Op(op::kBinInt1);
      Le(static_cast<uint8_t>(n));
    } else if (n >= 0 && n <= std::numeric_limits<uint16_t>::max()) {
      Op(op::kBinInt2);
      Le(static_cast<uint16_t>(n));
    } else if (n >= std::numeric_limits<int32_t>::min() &&
               n <= std::numeric_limits<int32_t>::max()) {
      Op(op::kBinInt);
      Le(static_cast<uint32_t>(static_cast<int32_t>(n)));
    } else {
      Op(op::kLong1);
      Op(8);
      Le(static_cast<uint64_t>(n));
    }
  }

  void Float(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof(bits));
    Op(op::kBinFloat);
    for (int i = 7; i >= 0; --i) Op(static_cast<uint8_t>(bits >> (8 * i)));  // big-endian
  }

  void MemoPut() {
    if (memo_next_ <= std::numeric_limits<uint8_t>::max()) {
      Op(op::kBinPut);
      Le(static_cast<uint8_t>(memo_next_));
    } else {
      Op(op::kLongBinPut);
      Le(memo_next_);
    }
    ++memo_next_;
  }

  void Str(const std::string& s) {
    if (auto it = strings_.find(s); it != strings_.end()) {
      Get(it->second);
      return;
    }
    Op(op::kBinUnicode);
    Le(static_cast<uint32_t>(s.size()));
    out_.append(s);
    strings_.emplace(s, memo_next_);
    MemoPut();
  }

  void Bytes(const std::string& b) {
    if (b.size() <= std::numeric_limits<uint8_t>::max()) {
      Op(op::kShortBinBytes);
      Le(static_cast<uint8_t>(b.size()));
    } else {
      Op(op::kBinBytes);
      Le(static_cast<uint32_t>(b.size()));
    }
    out_.append(b);
  }

  void Value(const PickleValue& v) {
    switch (v.kind()) {
      case PickleValue::Kind::kNone:
        Op(op::kNone);
        break;
      case PickleValue::Kind::kBool:
        Op(*v.AsBool() ? op::kNewTrue : op::kNewFalse);
        break;
      case PickleValue::Kind::kInt:
        Int(*v.AsInt());
        break;
      case PickleValue::Kind::kFloat:
        Float(*v.AsFloat());
        break;
      case PickleValue::Kind::kStr:
        Str(*v.AsStr());
        break;
      case PickleValue::Kind::kBytes:
        Bytes(v.AsBytes()->data);
        break;
      case PickleValue::Kind::kList:
        Op(op::kEmptyList);
        Op(op::kMark);
        for (const PickleValue& item : v.AsList()->items) Value(item);
        Op(op::kAppends);
        break;
      case PickleValue::Kind::kTuple: {
        const auto& items = v.AsTuple()->items;
        if (items.empty()) {
          Op(op::kEmptyTuple);
          break;
        }
        if (items.size() > 3) Op(op::kMark);
        for (const PickleValue& item : items) Value(item);
        Op(items.size() == 1   ? op::kTuple1
           : items.size() == 2 ? op::kTuple2
           : items.size() == 3 ? op::kTuple3
                               : op::kTuple);
        break;
      }
      case PickleValue::Kind::kDict:
        if (v.AsDict()->shared) {
          SharedDict(*v.AsDict());
          break;
        }
        Op(op::kEmptyDict);
        Op(op::kMark);
        for (const auto& [key, value] : v.AsDict()->items) {
          if (const auto* s = std::get_if<std::string>(&key)) {
            Str(*s);
          } else {
            Int(std::get<int64_t>(key));
          }
          Value(value);
        }
        Op(op::kSetItems);
        break;
    }
  }

  // Pickler::pushIValue: a container held more than once is written once, then BINPUT after it
  // is filled; later references are BINGETs. Equal shared dicts stand for the one object.
  void SharedDict(const PickleDict& d) {
    PickleDict plain = d;
    plain.shared = false;
    // The text is a hash key only: a float printed alike is told apart by ==.
    auto& same_text = shared_[DescribePickleValue(plain)];
    for (const auto& [seen, id] : same_text) {
      if (seen == plain) {
        Get(id);
        return;
      }
    }
    Value(plain);
    same_text.emplace_back(std::move(plain), memo_next_);
    MemoPut();
  }

  void Get(uint32_t id) {
    if (id <= std::numeric_limits<uint8_t>::max()) {
      Op(op::kBinGet);
      Le(static_cast<uint8_t>(id));
    } else {
      Op(op::kLongBinGet);
      Le(id);
    }
  }

  std::string out_;
  std::unordered_map<std::string, uint32_t> strings_;
  // Shared dicts written so far and their memo ids, by DescribePickleValue.
  std::unordered_map<std::string, std::vector<std::pair<PickleDict, uint32_t>>> shared_;
  uint32_t memo_next_ = 0;
};

}  // namespace

std::string WritePickle(const PickleValue& value) {
  return Writer().Finish(value);
}

}  // namespace ncclscope::flight_recorder
