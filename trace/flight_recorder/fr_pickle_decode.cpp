// DecodeFrDumpPickle: the flat reading of the pickle (pickle_flat_reader.h), then the dump. The
// small top-level parts (version, NCCL version, pg_config, pg_status) are materialised and given
// to DecodeFrDump itself, so they mean exactly what they mean there; the entries, nearly all of a
// dump, are read here from the flat values with DecodeFrDump's rules (fr_dump_decode.cpp,
// DecodeEntry): a key's last value counts, ints are not bools, pickle and JSON typing both pass.
// Anything these rules refuse goes back to the generic path for its error.
#include "trace/flight_recorder/fr_pickle_decode.h"

#include <array>
#include <cstring>
#include <string_view>
#include <vector>

#include "trace/flight_recorder/pickle_flat_reader.h"

namespace ncclscope::flight_recorder {

namespace {

using flat::FlatPickle;
using flat::Kind;
using flat::Val;

// Working memory kept per thread between dumps: a 2000-entry dump with 16 unshared stack frames
// per entry needs about 5 MiB.
constexpr size_t kKeepBytes = size_t{32} << 20;

void TrimIfLarge(FlatPickle& flat) {
  const size_t bytes = flat.items.capacity() * sizeof(Val) +
                       flat.nodes.capacity() * sizeof(flat::Node) +
                       (flat.stack.capacity() + flat.memo.capacity()) * sizeof(Val) +
                       flat.marks.capacity() * sizeof(size_t);
  if (bytes > kKeepBytes) flat = FlatPickle();
}

// The entry keys DecodeEntry reads, one slot each.
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
constexpr std::array<std::string_view, kSlots> kSlotKeys = {
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

uint8_t SlotOf(std::string_view key) {
  for (uint8_t s = 0; s < kSlots; ++s) {
    if (kSlotKeys[s] == key) return s;
  }
  return kSlots;
}

class EntryReader {
 public:
  EntryReader(const FlatPickle& p, bool keep_frames)
      : p_(p), keep_frames_(keep_frames), frame_checked_(keep_frames ? 0 : p.nodes.size(), 0) {}

  bool Entry(const Val& v, FrEntry* e);

 private:
  // Which slot the key at `position` of an entry dict fills. torch memoizes every string, so
  // from the second entry on each key is the same bytes of the input as in the entry before:
  // the slot found then is reused without comparing text.
  uint8_t SlotAt(size_t position, const Val& key) {
    if (position >= predicted_.size()) predicted_.resize(position + 1);
    Predicted& guess = predicted_[position];
    if (guess.valid && guess.offset == key.bits && guess.len == key.len) return guess.slot;
    guess = {true, key.len, key.bits, SlotOf(p_.Str(key))};
    return guess.slot;
  }

  static bool Int(const Val* v, bool required, int64_t* out) {
    if (v == nullptr) return !required;
    if (v->kind != Kind::kInt) return false;
    *out = static_cast<int64_t>(v->bits);
    return true;
  }
  static bool Bool(const Val* v, bool required, bool* out) {
    if (v == nullptr) return !required;
    if (v->kind != Kind::kBool) return false;
    *out = v->bits != 0;
    return true;
  }
  bool Str(const Val* v, bool required, std::string* out) const {
    if (v == nullptr) return !required;
    if (v->kind != Kind::kStr) return false;
    out->assign(p_.Str(*v));
    return true;
  }
  bool OptionalStr(const Val* v, std::optional<std::string>* out) const {
    if (v == nullptr) return true;
    if (v->kind != Kind::kStr) return false;
    out->emplace(p_.Str(*v));
    return true;
  }
  static bool OptionalTime(const Val* v, std::optional<int64_t>* out) {
    if (v == nullptr) return false;  // required in every version
    if (v->kind == Kind::kNone) return true;
    if (v->kind != Kind::kInt) return false;
    if (v->bits != 0) *out = static_cast<int64_t>(v->bits);
    return true;
  }
  static bool OptionalFloat(const Val* v, std::optional<double>* out) {
    if (v == nullptr) return true;
    if (v->kind == Kind::kFloat) {
      double d;
      std::memcpy(&d, &v->bits, sizeof(d));
      *out = d;
      return true;
    }
    if (v->kind != Kind::kInt) return false;
    *out = static_cast<double>(static_cast<int64_t>(v->bits));
    return true;
  }
  bool Sizes(const Val* v, std::vector<std::vector<int64_t>>* out) const {
    if (v == nullptr || v->kind != Kind::kList) return false;  // required in every version
    const auto outer = p_.Items(*v);
    out->resize(outer.size());
    for (size_t i = 0; i < outer.size(); ++i) {
      if (outer[i].kind != Kind::kList) return false;
      const auto inner = p_.Items(outer[i]);
      std::vector<int64_t>& dims = (*out)[i];
      dims.resize(inner.size());
      for (size_t j = 0; j < inner.size(); ++j) {
        if (inner[j].kind != Kind::kInt) return false;
        dims[j] = static_cast<int64_t>(inner[j].bits);
      }
    }
    return true;
  }
  bool StrList(const Val* v, bool required, std::vector<std::string>* out) const {
    if (v == nullptr) return !required;
    if (v->kind != Kind::kList) return false;
    const auto items = p_.Items(*v);
    out->resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind != Kind::kStr) return false;
      (*out)[i].assign(p_.Str(items[i]));
    }
    return true;
  }
  bool ProcessGroup(const Val* v, FrEntry* e) const {
    if (v == nullptr || (v->kind != Kind::kTuple && v->kind != Kind::kList)) return false;
    const auto items = p_.Items(*v);
    if (items.size() != 2 || items[0].kind != Kind::kStr || items[1].kind != Kind::kStr)
      return false;
    e->pg_name.assign(p_.Str(items[0]));
    e->pg_desc.assign(p_.Str(items[1]));
    return true;
  }
  bool State(const Val* v, FrState* out) const {
    if (v == nullptr || v->kind != Kind::kStr) return false;
    const std::string_view state = p_.Str(*v);
    for (FrState s : {FrState::kScheduled, FrState::kStarted, FrState::kCompleted}) {
      if (state == FrStateName(s)) {
        *out = s;
        return true;
      }
    }
    return false;
  }
  bool Frame(const Val& v, FrFrame* out) const;
  bool Frames(const Val* v, FrEntry* e);

  const FlatPickle& p_;
  const bool keep_frames_;
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

// A frame dict: name, filename (str) and line (int), each required; the last value of a key.
bool EntryReader::Frame(const Val& v, FrFrame* out) const {
  if (v.kind != Kind::kDict) return false;
  const Val* name = nullptr;
  const Val* filename = nullptr;
  const Val* line = nullptr;
  const auto items = p_.Items(v);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind != Kind::kStr) continue;
    const std::string_view key = p_.Str(items[i]);
    if (key == "name") {
      name = &items[i + 1];
    } else if (key == "filename") {
      filename = &items[i + 1];
    } else if (key == "line") {
      line = &items[i + 1];
    }
  }
  if (name == nullptr || filename == nullptr || line == nullptr || name->kind != Kind::kStr ||
      filename->kind != Kind::kStr || line->kind != Kind::kInt) {
    return false;
  }
  if (out != nullptr) {
    out->name.assign(p_.Str(*name));
    out->filename.assign(p_.Str(*filename));
    out->line = static_cast<int64_t>(line->bits);
  }
  return true;
}

bool EntryReader::Frames(const Val* v, FrEntry* e) {
  if (v == nullptr) return true;
  if (v->kind != Kind::kList) return false;
  const auto items = p_.Items(*v);
  if (!keep_frames_) {
    for (const Val& f : items) {
      if (f.kind != Kind::kDict) return false;
      uint8_t& checked = frame_checked_[f.bits];
      if (checked == 0 && !Frame(f, nullptr)) return false;
      checked = 1;
    }
    return true;
  }
  std::vector<FrFrame> frames(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Frame(items[i], &frames[i])) return false;
  }
  e->frames = std::move(frames);
  return true;
}

bool EntryReader::Entry(const Val& v, FrEntry* e) {
  if (v.kind != Kind::kDict) return false;
  std::array<const Val*, kSlots> at{};
  const auto items = p_.Items(v);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind != Kind::kStr) continue;  // DecodeFrDump looks up str keys only
    const uint8_t slot = SlotAt(i / 2, items[i]);
    if (slot < kSlots) at[slot] = &items[i + 1];
  }
  return Int(at[kRecordId], true, &e->record_id) && Int(at[kPgId], true, &e->pg_id) &&
         ProcessGroup(at[kProcessGroup], e) && OptionalStr(at[kThreadName], &e->thread_name) &&
         OptionalStr(at[kThreadId], &e->thread_id) &&
         Int(at[kCollectiveSeqId], true, &e->collective_seq_id) &&
         Int(at[kP2pSeqId], true, &e->p2p_seq_id) && Int(at[kOpId], true, &e->op_id) &&
         Str(at[kProfilingName], true, &e->profiling_name) &&
         Int(at[kTimeCreatedNs], true, &e->time_created_ns) &&
         OptionalFloat(at[kDurationMs], &e->duration_ms) &&
         Sizes(at[kInputSizes], &e->input_sizes) &&
         StrList(at[kInputDtypes], true, &e->input_dtypes) &&
         Sizes(at[kOutputSizes], &e->output_sizes) &&
         StrList(at[kOutputDtypes], true, &e->output_dtypes) && State(at[kState], &e->state) &&
         OptionalTime(at[kStartedNs], &e->time_discovered_started_ns) &&
         OptionalTime(at[kCompletedNs], &e->time_discovered_completed_ns) &&
         Bool(at[kRetired], true, &e->retired) && Int(at[kTimeoutMs], true, &e->timeout_ms) &&
         Bool(at[kIsP2p], true, &e->is_p2p) && Frames(at[kFrames], e);
}

// The dump, or nullopt where DecodeFrDump might say otherwise (the caller then asks it).
std::optional<FrDump> DecodeFlat(const FlatPickle& p, bool keep_frames) {
  if (p.root.kind != Kind::kDict) return std::nullopt;
  // The top-level keys DecodeFrDump reads besides entries; the last value of each counts.
  static constexpr std::array<std::string_view, 5> kTopKeys = {
      "version", "comm_lib_version", "nccl_version", "pg_config", "pg_status"};
  std::array<const Val*, kTopKeys.size()> top{};
  const Val* entries = nullptr;
  const auto items = p.Items(p.root);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind != Kind::kStr) continue;
    const std::string_view key = p.Str(items[i]);
    if (key == "entries") entries = &items[i + 1];
    for (size_t k = 0; k < kTopKeys.size(); ++k) {
      if (key == kTopKeys[k]) top[k] = &items[i + 1];
    }
  }
  PickleDict head;
  for (size_t k = 0; k < kTopKeys.size(); ++k) {
    if (top[k] != nullptr)
      head.items.emplace_back(std::string(kTopKeys[k]), p.Materialize(*top[k]));
  }
  std::string ignored;
  std::optional<FrDump> dump = DecodeFrDump(PickleValue(std::move(head)), &ignored);
  if (!dump) return std::nullopt;
  if (entries == nullptr) return dump;
  if (entries->kind != Kind::kList) return std::nullopt;
  EntryReader reader(p, keep_frames);
  const auto list = p.Items(*entries);
  dump->entries.resize(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!reader.Entry(list[i], &dump->entries[i])) return std::nullopt;
  }
  return dump;
}

}  // namespace

std::optional<FrDump> DecodeFrDumpPickle(const void* data, size_t size, const PickleLimits& limits,
                                         std::string* error, bool keep_frames,
                                         FrPickleDecodePath* path) {
  std::string scratch;
  std::string* err = error != nullptr ? error : &scratch;
  FrPickleDecodePath ignored_path;
  FrPickleDecodePath* took = path != nullptr ? path : &ignored_path;
  err->clear();
  // Reused by the next dump read on this thread, unless it grew past kKeepBytes.
  thread_local FlatPickle flat;
  struct TrimOnReturn {
    FlatPickle& flat;
    ~TrimOnReturn() { TrimIfLarge(flat); }
  } trim{flat};
  switch (flat::ReadFlatPickle(data, size, limits, &flat, err)) {
    case flat::FlatRead::kRefused:
      *took = FrPickleDecodePath::kRefused;
      return std::nullopt;
    case flat::FlatRead::kRead:
      if (std::optional<FrDump> dump = DecodeFlat(flat, keep_frames)) {
        *took = FrPickleDecodePath::kDirect;
        return dump;
      }
      break;
    case flat::FlatRead::kDeclined:
      break;
  }
  *took = FrPickleDecodePath::kGeneric;
  TrimIfLarge(flat);  // before the generic path takes more
  std::optional<PickleValue> tree = ParsePickle(data, size, limits, err);
  if (!tree) return std::nullopt;
  std::optional<FrDump> dump = DecodeFrDump(*tree, err);
  if (dump && !keep_frames) {
    for (FrEntry& e : dump->entries) e.frames.reset();
  }
  return dump;
}

}  // namespace ncclscope::flight_recorder
