#include "hang_detector/incident/incident_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "hang_detector/incident/incident_key.h"

namespace ncclscope::hang_detector {
namespace {

constexpr std::string_view kMagic = "ncclscope-incident 1";
constexpr size_t kMaxWordBytes = 4096;  // a job id, a class, an operation, the why

// Digits only, no sign, no overflow past `max`.
bool ParseUnsigned(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHex16(std::string_view s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (const char c : s) {
    const int d = HexDigit(c);
    if (d < 0 || (c >= 'A' && c <= 'F')) return false;  // written lower case
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

bool ParseRank(std::string_view s, int* out) {
  uint64_t v = 0;
  if (!ParseUnsigned(s, kMaxIncidentRank, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool ParseRanks(std::string_view s, std::vector<int>* out, size_t* total) {
  while (true) {
    const size_t comma = s.find(',');
    int r = 0;
    if (!ParseRank(s.substr(0, comma), &r)) return false;
    if (++*total > static_cast<size_t>(kMaxIncidentRank)) return false;
    out->push_back(r);
    if (comma == std::string_view::npos) return true;
    s.remove_prefix(comma + 1);
  }
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i == 0 ? "" : ",") + std::to_string(ranks[i]);
  return out.empty() ? "-" : out;
}

// A word of [A-Za-z0-9._-] (a job id, a verdict class, an operation name).
bool PlainWord(std::string_view s) {
  if (s.empty() || s.size() > kMaxWordBytes) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

// Free text on one line: every byte outside printable ASCII but space and '%' is %XX.
std::string PercentEncode(const std::string& s) {
  if (s == "-") return "%2D";  // "-" alone stands for no text
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f && c != '%') {
      out += ch;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

bool PercentDecode(std::string_view s, std::string* out) {
  if (s.size() > 3 * kMaxWordBytes) return false;
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c <= 0x20 || c >= 0x7f) return false;
    if (c != '%') {
      *out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return false;
    const int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// Splits at the first space; false when there is none.
bool SplitWord(std::string_view line, std::string_view* first, std::string_view* rest) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return false;
  *first = line.substr(0, sp);
  *rest = line.substr(sp + 1);
  return true;
}

struct LineParser {
  std::string_view rest;
  int line_no = 0;
  std::string* error;

  bool Next(std::string_view* line) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return Fail("truncated (no newline)");
    *line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    ++line_no;
    return true;
  }
  bool Fail(const char* what) {
    *error = "line " + std::to_string(line_no) + ": " + what;
    return false;
  }
  // "<key> <value>" with the key expected here.
  bool Field(std::string_view key, std::string_view* value) {
    std::string_view line, k;
    if (!Next(&line)) return false;
    if (!SplitWord(line, &k, value) || k != key) {
      *error = "line " + std::to_string(line_no) + ": expected '" + std::string(key) + " ...'";
      return false;
    }
    return true;
  }
};

bool ParseStage(std::string_view s, IncidentStage* out) {
  for (const IncidentStage st : {IncidentStage::kNone, IncidentStage::kSuspect,
                                 IncidentStage::kHang, IncidentStage::kResolved}) {
    if (s == IncidentStageName(st)) {
      *out = st;
      return true;
    }
  }
  return false;
}

bool ParseHow(std::string_view s, ConfirmedHow* out) {
  for (const ConfirmedHow h : {ConfirmedHow::kNot, ConfirmedHow::kProof, ConfirmedHow::kTime}) {
    if (s == ConfirmedHowName(h)) {
      *out = h;
      return true;
    }
  }
  return false;
}

bool ParseWallNs(std::string_view s, int64_t* out) {
  uint64_t n = 0;
  if (!ParseUnsigned(s, INT64_MAX, &n)) return false;
  *out = static_cast<int64_t>(n);
  return true;
}

// The fixed lines, in order, up to the entries.
bool ParseHead(LineParser& p, IncidentRecord* d) {
  std::string_view v, a, b;
  uint64_t n = 0;
  if (!p.Field("job", &v) || !SplitWord(v, &a, &v) || !ParseHex16(a, &d->job) ||
      !SplitWord(v, &a, &b) || !PlainWord(a) || a.size() > 63 ||
      !ParseUnsigned(b, UINT32_MAX, &n)) {
    return p.Fail("bad job: expected '<16 hex> <job id> <restart>'");
  }
  d->job_id = std::string(a);
  d->restart = static_cast<uint32_t>(n);
  if (d->job != JobKey(d->job_id, d->restart)) return p.Fail("job key does not match the job id");
  if (!p.Field("mode", &v) || (v != "report" && v != "abort")) return p.Fail("bad mode");
  d->abort_mode = v == "abort";
  if (!p.Field("holder", &v) || !SplitWord(v, &a, &b) || !ParseUnsigned(a, INT32_MAX, &n) ||
      n == 0) {
    return p.Fail("bad holder pid");
  }
  d->holder_pid = static_cast<int>(n);
  if (b != "-1" && !ParseRank(b, &d->holder_rank)) return p.Fail("bad holder rank");
  if (!p.Field("written", &v) || !ParseWallNs(v, &d->written_wall_ns)) {
    return p.Fail("bad written");
  }
  if (!p.Field("passes", &v) || !ParseUnsigned(v, UINT64_MAX, &d->passes)) {
    return p.Fail("bad passes");
  }
  if (!p.Field("stage", &v) || !ParseStage(v, &d->stage)) return p.Fail("bad stage");
  if (!p.Field("incident", &v) || !SplitWord(v, &a, &b) || !ParseHex16(a, &d->incident) ||
      !PlainWord(b)) {
    return p.Fail("bad incident");
  }
  d->cls = std::string(b);
  std::string_view comm, op, seq;
  if (!p.Field("op", &v) || !SplitWord(v, &comm, &v) || !SplitWord(v, &op, &seq) ||
      !ParseHex16(comm, &d->comm_id) || !PlainWord(op) ||
      !ParseUnsigned(seq, UINT64_MAX, &d->seq)) {
    return p.Fail("bad op");
  }
  d->op = std::string(op);
  if (!p.Field("comm-name", &v) || (v != "-" && !PercentDecode(v, &d->comm_name))) {
    return p.Fail("bad comm-name");
  }
  size_t total = 0;
  if (!p.Field("culprits", &v) || (v != "-" && !ParseRanks(v, &d->culprits, &total))) {
    return p.Fail("bad culprits");
  }
  if (!p.Field("onset", &v) || !ParseWallNs(v, &d->onset_wall_ns)) return p.Fail("bad onset");
  if (!p.Field("confirmed", &v) || !SplitWord(v, &a, &b) ||
      !ParseWallNs(a, &d->confirmed_wall_ns) || !ParseHow(b, &d->how)) {
    return p.Fail("bad confirmed");
  }
  if (!p.Field("resolved", &v) || !ParseWallNs(v, &d->resolved_wall_ns)) {
    return p.Fail("bad resolved");
  }
  if (!p.Field("why", &v) || (v != "-" && !PercentDecode(v, &d->why))) return p.Fail("bad why");
  return true;
}

}  // namespace

const char* IncidentStageName(IncidentStage s) {
  switch (s) {
    case IncidentStage::kNone:
      return "none";
    case IncidentStage::kSuspect:
      return "suspect";
    case IncidentStage::kHang:
      return "hang";
    case IncidentStage::kResolved:
      return "resolved";
  }
  return "none";
}

const char* ConfirmedHowName(ConfirmedHow h) {
  switch (h) {
    case ConfirmedHow::kNot:
      return "none";
    case ConfirmedHow::kProof:
      return "proof";
    case ConfirmedHow::kTime:
      return "time";
  }
  return "none";
}

std::string RenderIncident(const IncidentRecord& r) {
  std::string out(kMagic);
  out += "\njob " + Hex16(r.job) + " " + r.job_id + " " + std::to_string(r.restart);
  out += std::string("\nmode ") + (r.abort_mode ? "abort" : "report");
  out += "\nholder " + std::to_string(r.holder_pid) + " " + std::to_string(r.holder_rank);
  out += "\nwritten " + std::to_string(r.written_wall_ns);
  out += "\npasses " + std::to_string(r.passes);
  out += std::string("\nstage ") + IncidentStageName(r.stage);
  out += "\nincident " + Hex16(r.incident) + " " + (r.cls.empty() ? "-" : r.cls);
  out +=
      "\nop " + Hex16(r.comm_id) + " " + (r.op.empty() ? "-" : r.op) + " " + std::to_string(r.seq);
  out += "\ncomm-name " + (r.comm_name.empty() ? std::string("-") : PercentEncode(r.comm_name));
  out += "\nculprits " + RanksText(r.culprits);
  out += "\nonset " + std::to_string(r.onset_wall_ns);
  out += "\nconfirmed " + std::to_string(r.confirmed_wall_ns) + " " + ConfirmedHowName(r.how);
  out += "\nresolved " + std::to_string(r.resolved_wall_ns);
  out += "\nwhy " + (r.why.empty() ? std::string("-") : PercentEncode(r.why));
  for (const uint64_t c : r.hang_comms) out += "\nhang-comm " + Hex16(c);
  for (const IncidentWait& w : r.waits)
    out += "\nwait " + Hex16(w.comm_id) + " " + RanksText(w.ranks);
  out += "\nend\n";
  return out;
}

bool ParseIncident(std::string_view text, IncidentRecord* out, std::string* error) {
  if (text.size() > kMaxIncidentBytes) {
    *error = "larger than " + std::to_string(kMaxIncidentBytes) + " bytes";
    return false;
  }
  LineParser p{text, 0, error};
  IncidentRecord d;
  std::string_view line, v;
  if (!p.Next(&line)) return false;
  if (line != kMagic) return p.Fail("not an incident record (bad first line)");
  if (!ParseHead(p, &d)) return false;
  size_t entries = 0, ranks = 0;
  while (true) {
    if (!p.Next(&line)) return false;
    if (line == "end") break;
    if (++entries > kMaxIncidentEntries) return p.Fail("too many entries");
    std::string_view key;
    if (!SplitWord(line, &key, &v)) return p.Fail("bad entry");
    if (key == "hang-comm") {
      uint64_t c = 0;
      if (!ParseHex16(v, &c)) return p.Fail("bad hang-comm");
      d.hang_comms.push_back(c);
    } else if (key == "wait") {
      IncidentWait w;
      std::string_view comm, list;
      if (!SplitWord(v, &comm, &list) || !ParseHex16(comm, &w.comm_id) ||
          !ParseRanks(list, &w.ranks, &ranks)) {
        return p.Fail("bad wait");
      }
      d.waits.push_back(std::move(w));
    } else {
      return p.Fail("unknown entry");
    }
  }
  if (!p.rest.empty()) return p.Fail("text after end");
  // Only a confirmed hang names communicators to abort: anything else that does is not ours.
  if (d.stage != IncidentStage::kHang && (!d.hang_comms.empty() || !d.waits.empty())) {
    return p.Fail("communicators listed for a stage that acts on none");
  }
  // A hang says how it was confirmed; a suspect (or no incident) was not; a resolved incident
  // may have been either.
  const bool confirmed = d.how != ConfirmedHow::kNot;
  if ((d.stage == IncidentStage::kHang && !confirmed) ||
      ((d.stage == IncidentStage::kSuspect || d.stage == IncidentStage::kNone) && confirmed)) {
    return p.Fail("the stage and how it was confirmed disagree");
  }
  *out = std::move(d);
  return true;
}

std::vector<uint64_t> CommsToAbort(const IncidentRecord& r, int rank) {
  std::vector<uint64_t> ids;
  if (r.stage != IncidentStage::kHang) return ids;
  ids = r.hang_comms;
  for (const IncidentWait& w : r.waits) {
    if (std::find(w.ranks.begin(), w.ranks.end(), rank) != w.ranks.end()) {
      ids.push_back(w.comm_id);
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

int ReadSmallFile(const std::string& path, std::string* text) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return errno;
  text->clear();
  char buf[4096];
  while (text->size() <= kMaxIncidentBytes) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return e;
    }
    if (n == 0) break;
    text->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return 0;
}

}  // namespace ncclscope::hang_detector
