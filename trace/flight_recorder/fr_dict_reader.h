// The decoder's reading of one dict of a dump (fr_dump_decode.cpp): where the dict sits, for
// error messages; which key sits where; each field read at its slot with an error naming the
// place and key; and the process group's rank list in either of its spellings. Internal to the
// decoder; every function is pure and thread-safe.
#pragma once

#include <array>
#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/flight_recorder/pickle_flat.h"

namespace ncclscope::flight_recorder::decode {

using flat::FlatPickle;
using flat::Kind;
using flat::Val;

inline std::string Quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// Where a dict sits, spelled only when an error names it: "entries[3]", "entries[3].frames[2]",
// "pg_config['0']", or "" for the dump itself.
struct Where {
  const Where* parent = nullptr;
  std::string_view name;
  size_t index = SIZE_MAX;           // "[index]" when set
  const std::string* key = nullptr;  // "['key']" when set

  std::string Text() const {
    std::string text = parent != nullptr ? parent->Text() : "";
    if (!name.empty()) {
      if (!text.empty()) text += ".";
      text += name;
    }
    if (index != SIZE_MAX) text += "[" + std::to_string(index) + "]";
    if (key != nullptr) text += "[" + Quoted(*key) + "]";
    return text;
  }
};

// Which str key of a dict sits where, for the keys in `keys`: one pass over the dict, the first
// of a repeated key counting (as PickleDict::Find; a pickle's dicts hold each key once). Keys
// the table does not name are ignored.
template <size_t N>
void MapKeys(const FlatPickle& p, std::span<const Val> items,
             const std::array<std::string_view, N>& keys, std::array<const Val*, N>* at) {
  at->fill(nullptr);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind != Kind::kStr) continue;
    const std::string_view key = p.Str(items[i]);
    for (size_t k = 0; k < N; ++k) {
      if (keys[k] == key) {
        if ((*at)[k] == nullptr) (*at)[k] = &items[i + 1];
        break;
      }
    }
  }
}

// Reads the fields of one dict, each at its slot; errors name the dict's place and the key.
template <size_t N>
class DictReader {
 public:
  DictReader(const FlatPickle& p, const std::array<std::string_view, N>& keys,
             const std::array<const Val*, N>& at, const Where& where, std::string* error)
      : p_(p), keys_(keys), at_(at), where_(where), error_(error) {}

  // The value at `slot`; nullptr, with the error set when `required`, if absent.
  const Val* Get(size_t slot, bool required) {
    const Val* v = at_[slot];
    if (v == nullptr && required) Fail("", "missing key " + Quoted(keys_[slot]));
    return v;
  }

  [[gnu::cold, gnu::noinline]] bool Fail(std::string_view key, const std::string& what) {
    *error_ = where_.Text();
    if (!key.empty()) *error_ += (error_->empty() ? "" : ".") + std::string(key);
    if (error_->empty()) *error_ = "dump";
    *error_ += ": " + what;
    return false;
  }
  [[gnu::cold, gnu::noinline]] bool WrongType(std::string_view key, const char* expected,
                                              const Val& got) {
    return Fail(key, std::string("expected ") + expected + ", got " + PickleKindName(got.kind) +
                         " " + Describe(p_, got));
  }
  bool WrongType(size_t slot, const char* expected, const Val& got) {
    return WrongType(keys_[slot], expected, got);
  }

  bool Int(size_t slot, bool required, int64_t* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind != Kind::kInt) return WrongType(slot, "int", *v);
    *out = static_cast<int64_t>(v->bits);
    return true;
  }
  bool Bool(size_t slot, bool required, bool* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind != Kind::kBool) return WrongType(slot, "bool", *v);
    *out = v->bits != 0;
    return true;
  }
  bool Str(size_t slot, bool required, std::string* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind != Kind::kStr) return WrongType(slot, "str", *v);
    out->assign(p_.Str(*v));
    return true;
  }
  bool OptionalStr(size_t slot, std::optional<std::string>* out) {
    const Val* v = Get(slot, false);
    if (v == nullptr) return true;
    if (v->kind != Kind::kStr) return WrongType(slot, "str", *v);
    out->emplace(p_.Str(*v));
    return true;
  }
  // An int, or a decimal string (JSON writes pg_status values as strings).
  bool IntOrDecimal(size_t slot, bool required, int64_t* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind == Kind::kInt) {
      *out = static_cast<int64_t>(v->bits);
      return true;
    }
    if (v->kind == Kind::kStr) {
      const std::string_view s = p_.Str(*v);
      const char* end = s.data() + s.size();
      auto [ptr, ec] = std::from_chars(s.data(), end, *out);
      if (ec == std::errc() && ptr == end && !s.empty()) return true;
    }
    return WrongType(slot, "int or decimal str", *v);
  }
  // An int time, or None (pickle) or 0 (JSON) for "not seen".
  bool OptionalTime(size_t slot, bool required, std::optional<int64_t>* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind == Kind::kNone) return true;
    if (v->kind != Kind::kInt) return WrongType(slot, "int or None", *v);
    if (v->bits != 0) *out = static_cast<int64_t>(v->bits);
    return true;
  }
  bool OptionalFloat(size_t slot, std::optional<double>* out) {
    const Val* v = Get(slot, false);
    if (v == nullptr) return true;
    if (v->kind == Kind::kFloat) {
      double d;
      std::memcpy(&d, &v->bits, sizeof(d));
      *out = d;
      return true;
    }
    if (v->kind == Kind::kInt) {  // JSON may drop the fraction of a whole number
      *out = static_cast<double>(static_cast<int64_t>(v->bits));
      return true;
    }
    return WrongType(slot, "float", *v);
  }
  bool Sizes(size_t slot, bool required, std::vector<std::vector<int64_t>>* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind != Kind::kList) return WrongType(slot, "list of lists of int", *v);
    const auto outer = p_.Items(*v);
    out->resize(outer.size());
    for (size_t i = 0; i < outer.size(); ++i) {
      if (outer[i].kind != Kind::kList) return WrongType(ItemKey(slot, i), "list of int", outer[i]);
      const auto inner = p_.Items(outer[i]);
      std::vector<int64_t>& dims = (*out)[i];
      dims.resize(inner.size());
      for (size_t j = 0; j < inner.size(); ++j) {
        if (inner[j].kind != Kind::kInt)
          return WrongType(ItemKey(slot, i) + "[" + std::to_string(j) + "]", "int", inner[j]);
        dims[j] = static_cast<int64_t>(inner[j].bits);
      }
    }
    return true;
  }
  bool StrList(size_t slot, bool required, std::vector<std::string>* out) {
    const Val* v = Get(slot, required);
    if (v == nullptr) return !required;
    if (v->kind != Kind::kList) return WrongType(slot, "list of str", *v);
    const auto items = p_.Items(*v);
    out->resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind != Kind::kStr) return WrongType(ItemKey(slot, i), "str", items[i]);
      (*out)[i].assign(p_.Str(items[i]));
    }
    return true;
  }

  std::string ItemKey(size_t slot, size_t index) const {
    return std::string(keys_[slot]) + "[" + std::to_string(index) + "]";
  }
  static std::string Describe(const FlatPickle& p, const Val& v) {
    std::string text = DescribePickleValue(p.Materialize(v));
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
  }
  const FlatPickle& pickle() const { return p_; }
  const Where& where() const { return where_; }
  std::string* error() const { return error_; }

 private:
  const FlatPickle& p_;
  const std::array<std::string_view, N>& keys_;
  const std::array<const Val*, N>& at_;
  const Where& where_;
  std::string* error_;
};

// "[0, 1, 2]" (c10d/TraceUtils.h ranks_str; torchcomms' copy writes "[0,1,2]") or a list of ints.
inline bool ParseRanks(const FlatPickle& p, const Val& v, std::vector<int>* out) {
  out->clear();
  if (v.kind == Kind::kList) {
    for (const Val& item : p.Items(v)) {
      const auto r = static_cast<int64_t>(item.bits);
      if (item.kind != Kind::kInt || r < 0 || r > INT_MAX) return false;
      out->push_back(static_cast<int>(r));
    }
    return true;
  }
  if (v.kind != Kind::kStr) return false;
  std::string_view text = p.Str(v);
  auto trim = [](std::string_view t) {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    return t;
  };
  text = trim(text);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  text = trim(text.substr(1, text.size() - 2));
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view number = trim(text.substr(0, comma));
    int rank = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), rank);
    if (ec != std::errc() || ptr != number.data() + number.size() || number.empty() || rank < 0)
      return false;
    out->push_back(rank);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
    if (trim(text).empty()) return false;  // "[0, ]"
  }
  return true;
}

}  // namespace ncclscope::flight_recorder::decode
