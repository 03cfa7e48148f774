// DecodeFrDump and DecodeFrDumpPickle: a dump's values -> FrDump, naming the place of every
// problem. One decoder, on the flat form of the values (pickle_flat.h): a pickle is read into it
// without copying (the importer reads thousands of dumps of thousands of entries), a value tree
// (from JSON, or built in a test) is flattened into it first.
#include <array>
#include <charconv>
#include <climits>
#include <cstring>
#include <span>

#include "trace/flight_recorder/fr_dict_reader.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/fr_dump_versions.h"
#include "trace/flight_recorder/pickle_flat.h"

namespace ncclscope::flight_recorder {

namespace {

using flat::FlatPickle;
using flat::Kind;
using flat::Val;

using decode::DictReader;
using decode::MapKeys;
using decode::ParseRanks;
using decode::Quoted;
using decode::Where;

// The entry keys, one slot each.
enum Slot : uint8_t {
  kRecordId,
  kPgId,
  kProcessGroup,
  kThreadName,
  kThreadId,
  kCollectiveSeqId,
  kP2pSeqId,
  kOpId,
  kProfilingName,
  kTimeCreatedNs,
  kDurationMs,
  kInputSizes,
  kInputDtypes,
  kOutputSizes,
  kOutputDtypes,
  kState,
  kStartedNs,
  kCompletedNs,
  kRetired,
  kTimeoutMs,
  kIsP2p,
  kFrames,
  kSlots,
};
constexpr std::array<std::string_view, kSlots> kEntryKeys = {
    "record_id",
    "pg_id",
    "process_group",
    "thread_name",
    "thread_id",
    "collective_seq_id",
    "p2p_seq_id",
    "op_id",
    "profiling_name",
    "time_created_ns",
    "duration_ms",
    "input_sizes",
    "input_dtypes",
    "output_sizes",
    "output_dtypes",
    "state",
    "time_discovered_started_ns",
    "time_discovered_completed_ns",
    "retired",
    "timeout_ms",
    "is_p2p",
    "frames",
};
constexpr std::array<std::string_view, 3> kFrameKeys = {"name", "filename", "line"};

// Decodes the entries of one dump, in order.
class EntryDecoder {
 public:
  EntryDecoder(const FlatPickle& p, bool keep_frames, std::string* error)
      : p_(p),
        keep_frames_(keep_frames),
        error_(error),
        frame_checked_(keep_frames ? 0 : p.nodes.size(), 0) {}

  bool Entry(const Val& v, size_t index, FrEntry* e);

 private:
  // The entry's keys at their slots. torch and CPython memoize every string, so from the second
  // entry on each key is the same bytes of the input as in the entry before: the slot found then
  // is taken again without comparing text. The first of a repeated key counts.
  void MapEntryKeys(std::span<const Val> items, std::array<const Val*, kSlots>* at) {
    at->fill(nullptr);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      const Val& key = items[i];
      if (key.kind != Kind::kStr) continue;  // str keys only, as PickleDict::Find
      const size_t position = i / 2;
      if (position >= predicted_.size()) predicted_.resize(position + 1);
      Predicted& guess = predicted_[position];
      if (!guess.valid || guess.offset != key.bits || guess.len != key.len) {
        guess = {true, key.len, key.bits, kSlots};
        const std::string_view text = p_.Str(key);
        for (uint8_t s = 0; s < kSlots; ++s) {
          if (kEntryKeys[s] == text) {
            guess.slot = s;
            break;
          }
        }
      }
      if (guess.slot < kSlots && (*at)[guess.slot] == nullptr) (*at)[guess.slot] = &items[i + 1];
    }
  }
  static bool ProcessGroup(DictReader<kSlots>& r, FrEntry* e);
  static bool State(DictReader<kSlots>& r, FrState* out);
  bool Frame(const Val& v, const Where& where, FrFrame* out);
  bool Frames(DictReader<kSlots>& r, FrEntry* e);

  const FlatPickle& p_;
  const bool keep_frames_;
  std::string* error_;
  // Without keep_frames, a frame dict shared through the memo is checked once: 1 when it passed.
  std::vector<uint8_t> frame_checked_;
  struct Predicted {
    bool valid = false;
    uint32_t len = 0;
    uint64_t offset = 0;
    uint8_t slot = kSlots;
  };
  std::vector<Predicted> predicted_;
};

bool EntryDecoder::ProcessGroup(DictReader<kSlots>& r, FrEntry* e) {
  const Val* v = r.Get(kProcessGroup, true);
  if (v == nullptr) return false;
  // A tuple in pickle, a 2-element list in JSON.
  const FlatPickle& p = r.pickle();
  if (v->kind == Kind::kTuple || v->kind == Kind::kList) {
    const auto items = p.Items(*v);
    if (items.size() == 2 && items[0].kind == Kind::kStr && items[1].kind == Kind::kStr) {
      e->pg_name.assign(p.Str(items[0]));
      e->pg_desc.assign(p.Str(items[1]));
      return true;
    }
  }
  return r.WrongType(kProcessGroup, "(name: str, desc: str)", *v);
}

bool EntryDecoder::State(DictReader<kSlots>& r, FrState* out) {
  const Val* v = r.Get(kState, true);
  if (v == nullptr) return false;
  if (v->kind != Kind::kStr) return r.WrongType(kState, "str", *v);
  const std::string_view state = r.pickle().Str(*v);
  for (FrState s : {FrState::kScheduled, FrState::kStarted, FrState::kCompleted}) {
    if (state == FrStateName(s)) {
      *out = s;
      return true;
    }
  }
  return r.Fail("state", "expected scheduled, started or completed, got " + Quoted(state));
}

// A frame dict: name, filename (str) and line (int), each required. `out` may be null (checked
// only).
bool EntryDecoder::Frame(const Val& v, const Where& where, FrFrame* out) {
  std::array<const Val*, kFrameKeys.size()> at;
  MapKeys(p_, p_.Items(v), kFrameKeys, &at);
  DictReader<kFrameKeys.size()> r(p_, kFrameKeys, at, where, error_);
  FrFrame scratch;
  FrFrame* f = out != nullptr ? out : &scratch;
  return r.Str(0, true, &f->name) && r.Str(1, true, &f->filename) && r.Int(2, true, &f->line);
}

bool EntryDecoder::Frames(DictReader<kSlots>& r, FrEntry* e) {
  const Val* v = r.Get(kFrames, false);
  if (v == nullptr) return true;
  if (v->kind != Kind::kList) return r.WrongType(kFrames, "list of frame dicts", *v);
  const auto items = p_.Items(*v);
  std::vector<FrFrame> frames(keep_frames_ ? items.size() : 0);
  for (size_t i = 0; i < items.size(); ++i) {
    const Val& f = items[i];
    if (f.kind != Kind::kDict) return r.WrongType(r.ItemKey(kFrames, i), "dict", f);
    if (!keep_frames_ && frame_checked_[f.bits] != 0) continue;
    // "entries[3].frames[2].line: ..."
    const Where where{&r.where(), "frames", i, nullptr};
    if (!Frame(f, where, keep_frames_ ? &frames[i] : nullptr)) return false;
    if (!keep_frames_) frame_checked_[f.bits] = 1;
  }
  if (keep_frames_) e->frames = std::move(frames);
  return true;
}

bool EntryDecoder::Entry(const Val& v, size_t index, FrEntry* e) {
  const Where where{nullptr, "entries", index, nullptr};
  if (v.kind != Kind::kDict) {
    *error_ = where.Text() + ": expected dict, got " + PickleKindName(v.kind);
    return false;
  }
  std::array<const Val*, kSlots> at;
  MapEntryKeys(p_.Items(v), &at);
  DictReader<kSlots> r(p_, kEntryKeys, at, where, error_);
  return r.Int(kRecordId, true, &e->record_id) && r.Int(kPgId, true, &e->pg_id) &&
         ProcessGroup(r, e) && r.OptionalStr(kThreadName, &e->thread_name) &&
         r.OptionalStr(kThreadId, &e->thread_id) &&
         r.Int(kCollectiveSeqId, true, &e->collective_seq_id) &&
         r.Int(kP2pSeqId, true, &e->p2p_seq_id) && r.Int(kOpId, true, &e->op_id) &&
         r.Str(kProfilingName, true, &e->profiling_name) &&
         r.Int(kTimeCreatedNs, true, &e->time_created_ns) &&
         r.OptionalFloat(kDurationMs, &e->duration_ms) &&
         r.Sizes(kInputSizes, true, &e->input_sizes) &&
         r.StrList(kInputDtypes, true, &e->input_dtypes) &&
         r.Sizes(kOutputSizes, true, &e->output_sizes) &&
         r.StrList(kOutputDtypes, true, &e->output_dtypes) && State(r, &e->state) &&
         r.OptionalTime(kStartedNs, true, &e->time_discovered_started_ns) &&
         r.OptionalTime(kCompletedNs, true, &e->time_discovered_completed_ns) &&
         r.Bool(kRetired, true, &e->retired) && r.Int(kTimeoutMs, true, &e->timeout_ms) &&
         r.Bool(kIsP2p, true, &e->is_p2p) && Frames(r, e);
}

constexpr std::array<std::string_view, 3> kPgConfigKeys = {"name", "desc", "ranks"};

bool DecodePgConfig(const FlatPickle& p, const Val& v, std::string* error,
                    std::vector<FrPgConfig>* out) {
  if (v.kind != Kind::kDict) {
    *error = "pg_config: expected dict, got " + std::string(PickleKindName(v.kind));
    return false;
  }
  const auto items = p.Items(v);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind != Kind::kStr) {
      *error =
          "pg_config: key " + std::to_string(static_cast<int64_t>(items[i].bits)) + " is not a str";
      return false;
    }
    FrPgConfig c;
    c.key = p.Str(items[i]);
    const Where where{nullptr, "pg_config", SIZE_MAX, &c.key};
    const Val& value = items[i + 1];
    if (value.kind != Kind::kDict) {
      *error = where.Text() + ": expected dict, got " + PickleKindName(value.kind);
      return false;
    }
    std::array<const Val*, kPgConfigKeys.size()> at;
    MapKeys(p, p.Items(value), kPgConfigKeys, &at);
    DictReader<kPgConfigKeys.size()> r(p, kPgConfigKeys, at, where, error);
    if (!r.Str(0, true, &c.name) || !r.Str(1, true, &c.desc)) return false;
    const Val* ranks = r.Get(2, true);
    if (ranks == nullptr) return false;
    if (!ParseRanks(p, *ranks, &c.ranks))
      return r.WrongType(2, "a rank list such as \"[0, 1]\"", *ranks);
    out->push_back(std::move(c));
  }
  return true;
}

constexpr std::array<std::string_view, 3> kPgStatusKeys = {
    "last_enqueued_collective", "last_started_collective", "last_completed_collective"};

bool DecodePgStatus(const FlatPickle& p, const Val& v, std::string* error,
                    std::vector<FrPgStatus>* out) {
  if (v.kind != Kind::kDict) {
    *error = "pg_status: expected dict, got " + std::string(PickleKindName(v.kind));
    return false;
  }
  const auto items = p.Items(v);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    FrPgStatus s;
    // str(pg_id) in torch's dumps; an int key is read as its decimal text.
    if (items[i].kind == Kind::kStr) {
      s.pg_id = p.Str(items[i]);
    } else {
      s.pg_id = std::to_string(static_cast<int64_t>(items[i].bits));
    }
    const Where where{nullptr, "pg_status", SIZE_MAX, &s.pg_id};
    const Val& value = items[i + 1];
    if (value.kind != Kind::kDict) {
      *error = where.Text() + ": expected dict, got " + PickleKindName(value.kind);
      return false;
    }
    std::array<const Val*, kPgStatusKeys.size()> at;
    MapKeys(p, p.Items(value), kPgStatusKeys, &at);
    DictReader<kPgStatusKeys.size()> r(p, kPgStatusKeys, at, where, error);
    if (!r.IntOrDecimal(0, true, &s.last_enqueued_collective) ||
        !r.IntOrDecimal(1, true, &s.last_started_collective) ||
        !r.IntOrDecimal(2, true, &s.last_completed_collective)) {
      return false;
    }
    out->push_back(std::move(s));
  }
  return true;
}

constexpr std::array<std::string_view, 6> kTopKeys = {
    "version", "comm_lib_version", "nccl_version", "pg_config", "pg_status", "entries"};

std::optional<FrDump> Decode(const FlatPickle& p, bool keep_frames, std::string* error) {
  const Val& root = p.root;
  if (root.kind != Kind::kDict) {
    *error = std::string("dump: expected dict, got ") + PickleKindName(root.kind);
    return std::nullopt;
  }
  std::array<const Val*, kTopKeys.size()> at;
  MapKeys(p, p.Items(root), kTopKeys, &at);
  const Where top;
  DictReader<kTopKeys.size()> r(p, kTopKeys, at, top, error);
  FrDump dump;
  if (!r.Str(0, true, &dump.version)) return std::nullopt;
  const std::optional<FrVersion> version = ParseFrVersion(dump.version);
  if (!version || version->major != 2 || *version < fr_versions::kOldest) {
    r.Fail("version",
           "unsupported dump version " + Quoted(dump.version) + " (read: 2.2 and later 2.x)");
    return std::nullopt;
  }
  if (!r.Str(1, false, &dump.comm_lib_version) ||
      (dump.comm_lib_version.empty() && !r.Str(2, false, &dump.comm_lib_version))) {
    return std::nullopt;
  }
  const Val* pg_config = r.Get(3, true);
  if (pg_config == nullptr || !DecodePgConfig(p, *pg_config, error, &dump.pg_config))
    return std::nullopt;
  const bool status_required = *version >= fr_versions::kPgStatus;
  const Val* pg_status = r.Get(4, status_required);
  if (pg_status == nullptr && status_required) return std::nullopt;
  if (pg_status != nullptr && !DecodePgStatus(p, *pg_status, error, &dump.pg_status))
    return std::nullopt;
  // Absent when dumped without collectives, and in JSON when there are none.
  if (const Val* entries = r.Get(5, false)) {
    if (entries->kind != Kind::kList) {
      r.WrongType(5, "list", *entries);
      return std::nullopt;
    }
    const auto list = p.Items(*entries);
    EntryDecoder decoder(p, keep_frames, error);
    dump.entries.resize(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      if (!decoder.Entry(list[i], i, &dump.entries[i])) return std::nullopt;
    }
  }
  return dump;
}

// Working memory kept per thread between dumps: a 2000-entry dump with 16 unshared stack frames
// per entry needs about 5 MiB.
constexpr size_t kKeepBytes = size_t{32} << 20;

void TrimIfLarge(FlatPickle& p) {
  const size_t bytes = p.items.capacity() * sizeof(Val) + p.nodes.capacity() * sizeof(flat::Node) +
                       (p.stack.capacity() + p.memo.capacity()) * sizeof(Val) +
                       p.marks.capacity() * sizeof(size_t);
  if (bytes > kKeepBytes) p = FlatPickle();
}

}  // namespace

std::optional<FrDump> DecodeFrDump(const PickleValue& root, std::string* error) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  err->clear();
  FlatPickle p;
  flat::FlattenPickleValue(root, &p);
  return Decode(p, /*keep_frames=*/true, err);
}

std::optional<FrDump> DecodeFrDumpPickle(const void* data, size_t size, const PickleLimits& limits,
                                         std::string* error, bool keep_frames) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  err->clear();
  // Reused by the next dump read on this thread, unless it grew past kKeepBytes.
  thread_local FlatPickle p;
  struct TrimOnReturn {
    FlatPickle& p;
    ~TrimOnReturn() { TrimIfLarge(p); }
  } trim{p};
  if (!ReadPickle(data, size, limits, &p, err)) return std::nullopt;
  return Decode(p, keep_frames, err);
}

}  // namespace ncclscope::flight_recorder
