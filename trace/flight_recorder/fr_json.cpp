// ParseFrJson: nlohmann's SAX parser (iterative, so deep text cannot exhaust the stack) feeding a
// tree builder that enforces the depth limit and int64. EncodeFrDumpJson: EncodeFrDump's tree
// with the JSON typing of torch's dump_json applied (FlightRecorderDetail.hpp: dump_json,
// getPgConfigJson, getPgStatusJson).
#include "trace/flight_recorder/fr_json.h"

#include <cstdint>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace ncclscope::flight_recorder {

namespace {

using Json = nlohmann::json;

// Builds the PickleValue tree from SAX events. Returning false from an event stops the parse;
// error_ then says why.
class TreeBuilder : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return Add(PickleValue::None()); }
  bool boolean(bool v) override { return Add(PickleValue(v)); }
  bool number_integer(number_integer_t v) override { return Add(PickleValue(int64_t{v})); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Fail("integer " + std::to_string(v) + " is outside int64");
    }
    return Add(PickleValue(static_cast<int64_t>(v)));
  }
  bool number_float(number_float_t v, const string_t& token) override {
    // nlohmann reads an integer too large for (u)int64 as a float; the token still tells. (A
    // number outside double is its own parse error, "number overflow".)
    if (token.find_first_of(".eE") == string_t::npos) {
      return Fail("integer " + token + " is outside int64");
    }
    return Add(PickleValue(double{v}));
  }
  bool string(string_t& v) override { return Add(PickleValue(std::move(v))); }
  bool binary(binary_t& /*v*/) override { return Fail("binary values are not JSON"); }

  bool start_object(std::size_t /*size*/) override {
    if (!Open()) return false;
    open_.push_back(Frame{PickleDict{}, {}, {}});
    return true;
  }
  bool key(string_t& k) override {
    open_.back().key = std::move(k);
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t /*size*/) override {
    // Refused at its first byte, so that "[[[[..." is not read to its end first.
    if (open_.empty()) return Fail("expected a JSON object, got list");
    if (!Open()) return false;
    open_.push_back(Frame{PickleList{}, {}, {}});
    return true;
  }
  bool end_array() override { return Close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 7: ...".
    std::string what = ex.what();
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what.erase(0, bracket + 2);
    error_ = "JSON at byte " + std::to_string(position) + Where(" (in ", ")") + ": " + what;
    return false;
  }

  std::optional<PickleValue>& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    PickleValue value;  // a PickleDict or a PickleList being filled
    std::string key;    // dicts: the key the next value goes under
    // dicts: where each key sits, so a repeated key replaces the value in place.
    std::unordered_map<std::string, size_t> slots;
  };

  // The place the next value goes, e.g. "entries[3].op_id"; "" at the top level.
  std::string Path() const {
    std::string path;
    for (const Frame& f : open_) {
      if (f.value.AsDict() != nullptr) {
        if (!path.empty()) path += '.';
        path += f.key;
      } else {
        path += "[" + std::to_string(f.value.AsList()->items.size()) + "]";
      }
    }
    return path;
  }
  std::string Where(const char* before, const char* after) const {
    const std::string path = Path();
    return path.empty() ? std::string() : before + path + after;
  }

  bool Fail(const std::string& what) {
    const std::string path = Path();
    error_ = (path.empty() ? std::string("top level") : path) + ": " + what;
    return false;
  }

  bool Open() {
    if (open_.size() >= static_cast<size_t>(kFrJsonMaxDepth)) {
      return Fail("nesting deeper than " + std::to_string(kFrJsonMaxDepth) + " levels");
    }
    return true;
  }

  bool Close() {
    PickleValue done = std::move(open_.back().value);
    open_.pop_back();
    return Add(std::move(done));
  }

  bool Add(PickleValue v) {
    if (open_.empty()) {
      if (v.kind() != PickleValue::Kind::kDict) {
        return Fail(std::string("expected a JSON object, got ") + PickleKindName(v.kind()));
      }
      root_ = std::move(v);
      return true;
    }
    Frame& f = open_.back();
    if (PickleList* list = f.value.AsList()) {
      list->items.push_back(std::move(v));
      return true;
    }
    PickleDict* dict = f.value.AsDict();
    auto [slot, inserted] = f.slots.try_emplace(f.key, dict->items.size());
    if (inserted) {
      dict->items.emplace_back(std::move(f.key), std::move(v));
    } else {
      dict->items[slot->second].second = std::move(v);
    }
    return true;
  }

  std::vector<Frame> open_;
  std::optional<PickleValue> root_;
  std::string error_;
};

// The tree -> nlohmann::json, kind by kind. Keys are str in every tree EncodeFrDump makes.
Json ToJson(const PickleValue& v) {
  switch (v.kind()) {
    case PickleValue::Kind::kNone:
      return nullptr;
    case PickleValue::Kind::kBool:
      return *v.AsBool();
    case PickleValue::Kind::kInt:
      return *v.AsInt();
    case PickleValue::Kind::kFloat:
      return *v.AsFloat();
    case PickleValue::Kind::kStr:
      return *v.AsStr();
    case PickleValue::Kind::kBytes:
      return v.AsBytes()->data;
    case PickleValue::Kind::kList:
    case PickleValue::Kind::kTuple: {
      const auto& items = v.AsList() ? v.AsList()->items : v.AsTuple()->items;
      Json array = Json::array();
      for (const PickleValue& item : items) array.push_back(ToJson(item));
      return array;
    }
    case PickleValue::Kind::kDict: {
      Json object = Json::object();
      for (const auto& [key, value] : v.AsDict()->items) {
        const std::string* s = std::get_if<std::string>(&key);
        object[s ? *s : std::to_string(std::get<int64_t>(key))] = ToJson(value);
      }
      return object;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<PickleValue> ParseFrJson(std::string_view text, std::string* error) {
  try {
    TreeBuilder builder;
    const bool ok = Json::sax_parse(text.begin(), text.end(), &builder);
    if (ok && builder.root()) return std::move(builder.root());
    if (!builder.error().empty()) {
      *error = builder.error();
    } else {
      *error = "JSON: the text holds no value";
    }
  } catch (const std::exception& e) {  // bad_alloc, or nlohmann failing in a way not foreseen
    *error = std::string("JSON: ") + e.what();
  }
  return std::nullopt;
}

std::string EncodeFrDumpJson(const FrDump& dump) {
  Json top = ToJson(EncodeFrDump(dump));
  // getPgStatusJson: each value through std::to_string.
  if (auto it = top.find("pg_status"); it != top.end()) {
    for (auto& [pg_id, status] : it->items()) {
      for (auto& [name, value] : status.items()) value = std::to_string(value.get<int64_t>());
    }
  }
  // dump_json: entries only when there are some; absent discovery times as 0; no stack frames
  // (the JSON dump has none).
  if (auto it = top.find("entries"); it != top.end()) {
    if (it->empty()) {
      top.erase(it);
    } else {
      for (Json& entry : *it) {
        entry.erase("frames");
        for (const char* key : {"time_discovered_started_ns", "time_discovered_completed_ns"}) {
          if (entry[key].is_null()) entry[key] = 0;
        }
      }
    }
  }
  return top.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace ncclscope::flight_recorder
