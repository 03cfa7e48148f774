// The data a PyTorch Flight Recorder dump is made of, as a plain value tree: None, bool, int64,
// double, str, bytes, list, tuple and dict (str or int keys, kept in the order they were read).
// No object, class or callable can be represented, so nothing read into it can run code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ncclscope::flight_recorder {

class PickleValue;

struct PickleBytes {
  std::string data;
  bool operator==(const PickleBytes&) const = default;
};
struct PickleList {
  std::vector<PickleValue> items;
  bool operator==(const PickleList&) const;
};
struct PickleTuple {
  std::vector<PickleValue> items;
  bool operator==(const PickleTuple&) const;
};
// Python dict keys in FR dumps are str (every dict) or int (none today, allowed by the format).
using PickleKey = std::variant<std::string, int64_t>;
struct PickleDict {
  std::vector<std::pair<PickleKey, PickleValue>> items;
  // A layout hint for the writer, not part of the value (== ignores it): the dict is one object
  // held in several places, as torch's Flight Recorder dumper holds a stack frame every entry with
  // it shares. WritePickle writes the first of equal shared dicts and memoizes it, the others are
  // BINGETs of it. The reader leaves it false.
  bool shared = false;
  bool operator==(const PickleDict&) const;
  // The value under a str key, or nullptr. Linear: FR dicts are small or read once in order.
  const PickleValue* Find(std::string_view key) const;
};

// A value owns its children (no sharing): copying copies the subtree. Thread-compatible.
class PickleValue {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict };
  using Variant = std::variant<std::monostate, bool, int64_t, double, std::string, PickleBytes,
                               PickleList, PickleTuple, PickleDict>;

  PickleValue() = default;
  PickleValue(bool v) : v_(v) {}  // NOLINT(google-explicit-constructor): literal trees in tests
  PickleValue(int v) : v_(int64_t{v}) {}              // NOLINT(google-explicit-constructor)
  PickleValue(int64_t v) : v_(v) {}                   // NOLINT(google-explicit-constructor)
  PickleValue(double v) : v_(v) {}                    // NOLINT(google-explicit-constructor)
  PickleValue(std::string v) : v_(std::move(v)) {}    // NOLINT(google-explicit-constructor)
  PickleValue(const char* v) : v_(std::string(v)) {}  // NOLINT(google-explicit-constructor)
  PickleValue(PickleBytes v) : v_(std::move(v)) {}    // NOLINT(google-explicit-constructor)
  PickleValue(PickleList v) : v_(std::move(v)) {}     // NOLINT(google-explicit-constructor)
  PickleValue(PickleTuple v) : v_(std::move(v)) {}    // NOLINT(google-explicit-constructor)
  PickleValue(PickleDict v) : v_(std::move(v)) {}     // NOLINT(google-explicit-constructor)

  static PickleValue None() { return PickleValue(); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_none() const { return kind() == Kind::kNone; }

  // Each accessor returns nullptr when the value is of another kind.
  const bool* AsBool() const { return std::get_if<bool>(&v_); }
  const int64_t* AsInt() const { return std::get_if<int64_t>(&v_); }
  const double* AsFloat() const { return std::get_if<double>(&v_); }
  const std::string* AsStr() const { return std::get_if<std::string>(&v_); }
  const PickleBytes* AsBytes() const { return std::get_if<PickleBytes>(&v_); }
  const PickleList* AsList() const { return std::get_if<PickleList>(&v_); }
  const PickleTuple* AsTuple() const { return std::get_if<PickleTuple>(&v_); }
  const PickleDict* AsDict() const { return std::get_if<PickleDict>(&v_); }
  std::string* AsStr() { return std::get_if<std::string>(&v_); }
  PickleList* AsList() { return std::get_if<PickleList>(&v_); }
  PickleDict* AsDict() { return std::get_if<PickleDict>(&v_); }

  const Variant& variant() const { return v_; }
  bool operator==(const PickleValue& other) const { return v_ == other.v_; }

 private:
  Variant v_;
};

// Python's name for a kind ("NoneType", "int", "str", ...), for error messages. Pure.
const char* PickleKindName(PickleValue::Kind kind);

// A Python-literal rendering ({'a': [1, 2.5, None]}), for test failures and error messages. Pure.
std::string DescribePickleValue(const PickleValue& value);

inline bool PickleList::operator==(const PickleList& o) const {
  return items == o.items;
}
inline bool PickleTuple::operator==(const PickleTuple& o) const {
  return items == o.items;
}
inline bool PickleDict::operator==(const PickleDict& o) const {
  return items == o.items;
}

}  // namespace ncclscope::flight_recorder
