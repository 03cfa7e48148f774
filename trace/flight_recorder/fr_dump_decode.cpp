// DecodeFrDump: the value tree of a dump -> FrDump, naming the place of every problem.
#include <charconv>
#include <climits>

#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/fr_dump_versions.h"

namespace ncclscope::flight_recorder {

namespace {

std::string Quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// Reads the keys of one dict; `where` names it in errors ("entries[3]", "pg_config['0']").
class DictReader {
 public:
  DictReader(const PickleDict& dict, std::string where, std::string* error)
      : dict_(dict), where_(std::move(where)), error_(error) {}

  // The value under `key`; nullptr, with the error set when `required`, if absent.
  const PickleValue* Get(std::string_view key, bool required) {
    const PickleValue* v = dict_.Find(key);
    if (v == nullptr && required) Fail("", "missing key " + Quoted(key));
    return v;
  }

  bool Fail(std::string_view key, const std::string& what) {
    *error_ = where_;
    if (!key.empty()) *error_ += (where_.empty() ? "" : ".") + std::string(key);
    if (error_->empty()) *error_ = "dump";
    *error_ += ": " + what;
    return false;
  }
  bool WrongType(std::string_view key, const char* expected, const PickleValue& got) {
    return Fail(key, std::string("expected ") + expected + ", got " + PickleKindName(got.kind()) +
                         " " + Describe(got));
  }

  bool Int(std::string_view key, bool required, int64_t* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    if (const int64_t* i = v->AsInt()) {
      *out = *i;
      return true;
    }
    return WrongType(key, "int", *v);
  }
  bool Bool(std::string_view key, bool required, bool* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    if (const bool* b = v->AsBool()) {
      *out = *b;
      return true;
    }
    return WrongType(key, "bool", *v);
  }
  bool Str(std::string_view key, bool required, std::string* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    if (const std::string* s = v->AsStr()) {
      *out = *s;
      return true;
    }
    return WrongType(key, "str", *v);
  }
  bool OptionalStr(std::string_view key, std::optional<std::string>* out) {
    const PickleValue* v = Get(key, false);
    if (v == nullptr) return true;
    if (const std::string* s = v->AsStr()) {
      *out = *s;
      return true;
    }
    return WrongType(key, "str", *v);
  }
  // An int, or a decimal string (JSON writes pg_status values as strings).
  bool IntOrDecimal(std::string_view key, bool required, int64_t* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    if (const int64_t* i = v->AsInt()) {
      *out = *i;
      return true;
    }
    if (const std::string* s = v->AsStr()) {
      const char* end = s->data() + s->size();
      auto [p, ec] = std::from_chars(s->data(), end, *out);
      if (ec == std::errc() && p == end && !s->empty()) return true;
    }
    return WrongType(key, "int or decimal str", *v);
  }
  // An int time, or None (pickle) or 0 (JSON) for "not seen".
  bool OptionalTime(std::string_view key, bool required, std::optional<int64_t>* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    if (v->is_none()) return true;
    if (const int64_t* i = v->AsInt()) {
      if (*i != 0) *out = *i;
      return true;
    }
    return WrongType(key, "int or None", *v);
  }
  bool OptionalFloat(std::string_view key, std::optional<double>* out) {
    const PickleValue* v = Get(key, false);
    if (v == nullptr) return true;
    if (const double* d = v->AsFloat()) {
      *out = *d;
      return true;
    }
    if (const int64_t* i = v->AsInt()) {  // JSON may drop the fraction of a whole number
      *out = static_cast<double>(*i);
      return true;
    }
    return WrongType(key, "float", *v);
  }
  bool Sizes(std::string_view key, bool required, std::vector<std::vector<int64_t>>* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    const PickleList* outer = v->AsList();
    if (outer == nullptr) return WrongType(key, "list of lists of int", *v);
    out->clear();
    for (size_t i = 0; i < outer->items.size(); ++i) {
      const PickleList* inner = outer->items[i].AsList();
      const std::string item_key = std::string(key) + "[" + std::to_string(i) + "]";
      if (inner == nullptr) return WrongType(item_key, "list of int", outer->items[i]);
      std::vector<int64_t> dims;
      for (size_t j = 0; j < inner->items.size(); ++j) {
        const int64_t* d = inner->items[j].AsInt();
        if (d == nullptr)
          return WrongType(item_key + "[" + std::to_string(j) + "]", "int", inner->items[j]);
        dims.push_back(*d);
      }
      out->push_back(std::move(dims));
    }
    return true;
  }
  bool StrList(std::string_view key, bool required, std::vector<std::string>* out) {
    const PickleValue* v = Get(key, required);
    if (v == nullptr) return !required;
    const PickleList* list = v->AsList();
    if (list == nullptr) return WrongType(key, "list of str", *v);
    out->clear();
    for (size_t i = 0; i < list->items.size(); ++i) {
      const std::string* s = list->items[i].AsStr();
      if (s == nullptr)
        return WrongType(std::string(key) + "[" + std::to_string(i) + "]", "str", list->items[i]);
      out->push_back(*s);
    }
    return true;
  }

  static std::string Describe(const PickleValue& v) {
    std::string text = DescribePickleValue(v);
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
  }

 private:
  const PickleDict& dict_;
  std::string where_;
  std::string* error_;
};

std::string Item(std::string_view where, size_t index) {
  return std::string(where) + "[" + std::to_string(index) + "]";
}
std::string Item(std::string_view where, std::string_view key) {
  return std::string(where) + "[" + Quoted(key) + "]";
}

// "[0, 1, 2]" (c10d/TraceUtils.h ranks_str; torchcomms' copy writes "[0,1,2]") or a list of ints.
bool ParseRanks(const PickleValue& v, std::vector<int>* out) {
  out->clear();
  if (const PickleList* list = v.AsList()) {
    for (const PickleValue& item : list->items) {
      const int64_t* r = item.AsInt();
      if (r == nullptr || *r < 0 || *r > INT_MAX) return false;
      out->push_back(static_cast<int>(*r));
    }
    return true;
  }
  const std::string* s = v.AsStr();
  if (s == nullptr) return false;
  std::string_view text = *s;
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
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), rank);
    if (ec != std::errc() || p != number.data() + number.size() || number.empty() || rank < 0)
      return false;
    out->push_back(rank);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
    if (trim(text).empty()) return false;  // "[0, ]"
  }
  return true;
}

bool DecodeState(DictReader& r, FrState* out) {
  std::string state;
  if (!r.Str("state", true, &state)) return false;
  for (FrState s : {FrState::kScheduled, FrState::kStarted, FrState::kCompleted}) {
    if (state == FrStateName(s)) {
      *out = s;
      return true;
    }
  }
  return r.Fail("state", "expected scheduled, started or completed, got " + Quoted(state));
}

bool DecodeProcessGroup(DictReader& r, FrEntry* e) {
  const PickleValue* v = r.Get("process_group", true);
  if (v == nullptr) return false;
  // A tuple in pickle, a 2-element list in JSON.
  const std::vector<PickleValue>* items = nullptr;
  if (const PickleTuple* t = v->AsTuple()) items = &t->items;
  if (const PickleList* l = v->AsList()) items = &l->items;
  if (items == nullptr || items->size() != 2 || (*items)[0].AsStr() == nullptr ||
      (*items)[1].AsStr() == nullptr) {
    return r.WrongType("process_group", "(name: str, desc: str)", *v);
  }
  e->pg_name = *(*items)[0].AsStr();
  e->pg_desc = *(*items)[1].AsStr();
  return true;
}

bool DecodeFrames(DictReader& r, const std::string& where, std::string* error, FrEntry* e) {
  const PickleValue* v = r.Get("frames", false);
  if (v == nullptr) return true;
  const PickleList* list = v->AsList();
  if (list == nullptr) return r.WrongType("frames", "list of frame dicts", *v);
  std::vector<FrFrame> frames;
  frames.reserve(list->items.size());
  for (size_t i = 0; i < list->items.size(); ++i) {
    const PickleDict* d = list->items[i].AsDict();
    if (d == nullptr) return r.WrongType(Item("frames", i), "dict", list->items[i]);
    DictReader fr(*d, Item(where + ".frames", i), error);  // "entries[3].frames[2].line: ..."
    FrFrame f;
    if (!fr.Str("name", true, &f.name) || !fr.Str("filename", true, &f.filename) ||
        !fr.Int("line", true, &f.line)) {
      return false;
    }
    frames.push_back(std::move(f));
  }
  e->frames = std::move(frames);
  return true;
}

bool DecodeEntry(const PickleValue& v, size_t index, std::string* error, FrEntry* e) {
  const std::string where = Item("entries", index);
  const PickleDict* d = v.AsDict();
  if (d == nullptr) {
    *error = where + ": expected dict, got " + PickleKindName(v.kind());
    return false;
  }
  DictReader r(*d, where, error);
  return r.Int("record_id", true, &e->record_id) && r.Int("pg_id", true, &e->pg_id) &&
         DecodeProcessGroup(r, e) && r.OptionalStr("thread_name", &e->thread_name) &&
         r.OptionalStr("thread_id", &e->thread_id) &&
         r.Int("collective_seq_id", true, &e->collective_seq_id) &&
         r.Int("p2p_seq_id", true, &e->p2p_seq_id) && r.Int("op_id", true, &e->op_id) &&
         r.Str("profiling_name", true, &e->profiling_name) &&
         r.Int("time_created_ns", true, &e->time_created_ns) &&
         r.OptionalFloat("duration_ms", &e->duration_ms) &&
         r.Sizes("input_sizes", true, &e->input_sizes) &&
         r.StrList("input_dtypes", true, &e->input_dtypes) &&
         r.Sizes("output_sizes", true, &e->output_sizes) &&
         r.StrList("output_dtypes", true, &e->output_dtypes) && DecodeState(r, &e->state) &&
         r.OptionalTime("time_discovered_started_ns", true, &e->time_discovered_started_ns) &&
         r.OptionalTime("time_discovered_completed_ns", true, &e->time_discovered_completed_ns) &&
         r.Bool("retired", true, &e->retired) && r.Int("timeout_ms", true, &e->timeout_ms) &&
         r.Bool("is_p2p", true, &e->is_p2p) && DecodeFrames(r, where, error, e);
}

bool DecodePgConfig(const PickleValue& v, std::string* error, std::vector<FrPgConfig>* out) {
  const PickleDict* d = v.AsDict();
  if (d == nullptr) {
    *error = "pg_config: expected dict, got " + std::string(PickleKindName(v.kind()));
    return false;
  }
  for (const auto& [key, value] : d->items) {
    const std::string* k = std::get_if<std::string>(&key);
    if (k == nullptr) {
      *error = "pg_config: key " + std::to_string(std::get<int64_t>(key)) + " is not a str";
      return false;
    }
    const std::string where = Item("pg_config", *k);
    const PickleDict* pg = value.AsDict();
    if (pg == nullptr) {
      *error = where + ": expected dict, got " + PickleKindName(value.kind());
      return false;
    }
    DictReader r(*pg, where, error);
    FrPgConfig c;
    c.key = *k;
    if (!r.Str("name", true, &c.name) || !r.Str("desc", true, &c.desc)) return false;
    const PickleValue* ranks = r.Get("ranks", true);
    if (ranks == nullptr) return false;
    if (!ParseRanks(*ranks, &c.ranks))
      return r.WrongType("ranks", "a rank list such as \"[0, 1]\"", *ranks);
    out->push_back(std::move(c));
  }
  return true;
}

bool DecodePgStatus(const PickleValue& v, std::string* error, std::vector<FrPgStatus>* out) {
  const PickleDict* d = v.AsDict();
  if (d == nullptr) {
    *error = "pg_status: expected dict, got " + std::string(PickleKindName(v.kind()));
    return false;
  }
  for (const auto& [key, value] : d->items) {
    FrPgStatus s;
    // str(pg_id) in torch's dumps; an int key is read as its decimal text.
    if (const std::string* k = std::get_if<std::string>(&key)) {
      s.pg_id = *k;
    } else {
      s.pg_id = std::to_string(std::get<int64_t>(key));
    }
    const std::string where = Item("pg_status", s.pg_id);
    const PickleDict* pg = value.AsDict();
    if (pg == nullptr) {
      *error = where + ": expected dict, got " + PickleKindName(value.kind());
      return false;
    }
    DictReader r(*pg, where, error);
    if (!r.IntOrDecimal("last_enqueued_collective", true, &s.last_enqueued_collective) ||
        !r.IntOrDecimal("last_started_collective", true, &s.last_started_collective) ||
        !r.IntOrDecimal("last_completed_collective", true, &s.last_completed_collective)) {
      return false;
    }
    out->push_back(std::move(s));
  }
  return true;
}

}  // namespace

std::optional<FrDump> DecodeFrDump(const PickleValue& root, std::string* error) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  err->clear();
  const PickleDict* top = root.AsDict();
  if (top == nullptr) {
    *err = std::string("dump: expected dict, got ") + PickleKindName(root.kind());
    return std::nullopt;
  }
  DictReader r(*top, "", err);
  FrDump dump;
  if (!r.Str("version", true, &dump.version)) return std::nullopt;
  const std::optional<FrVersion> version = ParseFrVersion(dump.version);
  if (!version || version->major != 2 || *version < fr_versions::kOldest) {
    r.Fail("version",
           "unsupported dump version " + Quoted(dump.version) + " (read: 2.2 and later 2.x)");
    return std::nullopt;
  }
  if (!r.Str("comm_lib_version", false, &dump.comm_lib_version) ||
      (dump.comm_lib_version.empty() && !r.Str("nccl_version", false, &dump.comm_lib_version))) {
    return std::nullopt;
  }
  const PickleValue* pg_config = r.Get("pg_config", true);
  if (pg_config == nullptr || !DecodePgConfig(*pg_config, err, &dump.pg_config))
    return std::nullopt;
  const bool status_required = *version >= fr_versions::kPgStatus;
  const PickleValue* pg_status = r.Get("pg_status", status_required);
  if (pg_status == nullptr && status_required) return std::nullopt;
  if (pg_status != nullptr && !DecodePgStatus(*pg_status, err, &dump.pg_status))
    return std::nullopt;
  // Absent when dumped without collectives, and in JSON when there are none.
  if (const PickleValue* entries = r.Get("entries", false)) {
    const PickleList* list = entries->AsList();
    if (list == nullptr) {
      r.WrongType("entries", "list", *entries);
      return std::nullopt;
    }
    dump.entries.resize(list->items.size());
    for (size_t i = 0; i < list->items.size(); ++i) {
      if (!DecodeEntry(list->items[i], i, err, &dump.entries[i])) return std::nullopt;
    }
  }
  return dump;
}

}  // namespace ncclscope::flight_recorder
