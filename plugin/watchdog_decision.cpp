#include "plugin/watchdog_decision.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "plugin/incident_report.h"

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

constexpr std::string_view kMagic = "ncclscope-watchdog-decision 1";

const char* StageText(DecisionStage s) {
  switch (s) {
    case DecisionStage::kNone:
      return "none";
    case DecisionStage::kSuspect:
      return "suspect";
    case DecisionStage::kHang:
      return "hang";
  }
  return "none";
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

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

bool ParseHex16(std::string_view s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (const char c : s) {
    int d = 0;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

bool ParseRank(std::string_view s, int* out) {
  uint64_t v = 0;
  if (!ParseUnsigned(s, kMaxDecisionRank, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

// Splits "key value" at the first space; false when there is none.
bool SplitKey(std::string_view line, std::string_view* key, std::string_view* value) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return false;
  *key = line.substr(0, sp);
  *value = line.substr(sp + 1);
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
    *error = "line " + std::to_string(line_no + 1) + ": " + what;
    return false;
  }
  // "<key> <value>" with the key expected here.
  bool Field(std::string_view key, std::string_view* value) {
    std::string_view line, k;
    if (!Next(&line)) return false;
    if (!SplitKey(line, &k, value) || k != key) {
      --line_no;
      return Fail("expected a line starting with the key that belongs here");
    }
    return true;
  }
};

bool ParseWait(std::string_view value, DecisionWait* w, size_t* total_ranks) {
  const size_t sp = value.find(' ');
  if (sp == std::string_view::npos || !ParseHex16(value.substr(0, sp), &w->comm_id)) return false;
  std::string_view ranks = value.substr(sp + 1);
  while (true) {
    const size_t comma = ranks.find(',');
    int r = 0;
    if (!ParseRank(ranks.substr(0, comma), &r)) return false;
    if (++*total_ranks > kMaxDecisionRank) return false;
    w->ranks.push_back(r);
    if (comma == std::string_view::npos) return true;
    ranks.remove_prefix(comma + 1);
  }
}

}  // namespace

uint64_t JobKey(const std::string& job_id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : job_id) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string NodeLockPath(const std::string& dir, uint64_t job_key) {
  return dir + "/.watchdog-" + Hex(job_key) + ".lock";
}

std::string DecisionName(uint64_t job_key) {
  return ".watchdog-" + Hex(job_key) + ".decision";
}

Decision DecisionFromAnalysis(const hd::Analysis& a) {
  Decision d;
  if (!a.usable || a.verdicts.empty() || !hd::IsHang(a.verdicts.front().cls)) return d;
  const hd::Verdict& head = a.verdicts.front();
  d.incident = IncidentKey(head);
  if (hd::IsSuspect(head)) {
    d.stage = DecisionStage::kSuspect;
    return d;
  }
  d.stage = DecisionStage::kHang;
  for (const hd::Verdict& v : a.verdicts) {
    if (hd::IsConfirmedHang(v) && v.comm_id != 0) d.hang_comms.push_back(v.comm_id);
  }
  std::sort(d.hang_comms.begin(), d.hang_comms.end());
  d.hang_comms.erase(std::unique(d.hang_comms.begin(), d.hang_comms.end()), d.hang_comms.end());
  for (const hd::WaitingOn& w : a.waiting) {
    DecisionWait dw;
    dw.comm_id = w.comm_id;
    for (const int r : w.issued) {
      if (r >= 0 && r <= kMaxDecisionRank) dw.ranks.push_back(r);
    }
    if (!dw.ranks.empty()) d.waits.push_back(std::move(dw));
  }
  return d;
}

std::string RenderDecision(const Decision& d) {
  std::string out(kMagic);
  out += "\njob " + Hex(d.job);
  out += "\nholder " + std::to_string(d.holder_pid) + " " + std::to_string(d.holder_rank);
  out += "\nwritten " + std::to_string(d.written_wall_ns);
  out += "\nonset " + std::to_string(d.onset_wall_ns);
  out += "\npasses " + std::to_string(d.passes);
  out += std::string("\nstage ") + StageText(d.stage);
  out += "\nincident " + Hex(d.incident);
  for (const uint64_t c : d.hang_comms) out += "\nhang-comm " + Hex(c);
  for (const DecisionWait& w : d.waits) {
    out += "\nwait " + Hex(w.comm_id);
    for (size_t i = 0; i < w.ranks.size(); ++i) {
      out += (i == 0 ? " " : ",") + std::to_string(w.ranks[i]);
    }
  }
  out += "\nend\n";
  return out;
}

bool ParseDecision(std::string_view text, Decision* out, std::string* error) {
  if (text.size() > kMaxDecisionBytes) {
    *error = "larger than " + std::to_string(kMaxDecisionBytes) + " bytes";
    return false;
  }
  LineParser p{text, 0, error};
  Decision d;
  std::string_view line, v;
  if (!p.Next(&line)) return false;
  if (line != kMagic) return p.Fail("not a watchdog decision (bad first line)");
  uint64_t n = 0;
  if (!p.Field("job", &v) || !ParseHex16(v, &d.job)) return p.Fail("bad job");
  if (!p.Field("holder", &v)) return false;
  std::string_view pid_text, rank_text;
  if (!SplitKey(v, &pid_text, &rank_text) || !ParseUnsigned(pid_text, INT32_MAX, &n) || n == 0) {
    return p.Fail("bad holder pid");
  }
  d.holder_pid = static_cast<int>(n);
  if (rank_text != "-1" && !ParseRank(rank_text, &d.holder_rank)) return p.Fail("bad holder rank");
  if (!p.Field("written", &v) || !ParseUnsigned(v, INT64_MAX, &n)) return p.Fail("bad time");
  d.written_wall_ns = static_cast<int64_t>(n);
  if (!p.Field("onset", &v) || !ParseUnsigned(v, INT64_MAX, &n)) return p.Fail("bad onset");
  d.onset_wall_ns = static_cast<int64_t>(n);
  if (!p.Field("passes", &v) || !ParseUnsigned(v, UINT64_MAX, &d.passes)) {
    return p.Fail("bad passes");
  }
  if (!p.Field("stage", &v)) return false;
  if (v == "none") {
    d.stage = DecisionStage::kNone;
  } else if (v == "suspect") {
    d.stage = DecisionStage::kSuspect;
  } else if (v == "hang") {
    d.stage = DecisionStage::kHang;
  } else {
    return p.Fail("bad stage");
  }
  if (!p.Field("incident", &v) || !ParseHex16(v, &d.incident)) return p.Fail("bad incident");
  size_t entries = 0, ranks = 0;
  while (true) {
    if (!p.Next(&line)) return false;
    if (line == "end") break;
    if (++entries > kMaxDecisionEntries) return p.Fail("too many entries");
    std::string_view key;
    if (!SplitKey(line, &key, &v)) return p.Fail("bad entry");
    if (key == "hang-comm") {
      uint64_t c = 0;
      if (!ParseHex16(v, &c)) return p.Fail("bad hang-comm");
      d.hang_comms.push_back(c);
    } else if (key == "wait") {
      DecisionWait w;
      if (!ParseWait(v, &w, &ranks)) return p.Fail("bad wait");
      d.waits.push_back(std::move(w));
    } else {
      return p.Fail("unknown entry");
    }
  }
  if (!p.rest.empty()) return p.Fail("text after end");
  // Only a confirmed hang names communicators: anything else that does is not ours.
  if (d.stage != DecisionStage::kHang && (!d.hang_comms.empty() || !d.waits.empty())) {
    return p.Fail("communicators listed for a stage that acts on none");
  }
  *out = std::move(d);
  return true;
}

std::vector<uint64_t> CommsToAbort(const Decision& d, int rank) {
  std::vector<uint64_t> ids;
  if (d.stage != DecisionStage::kHang) return ids;
  ids = d.hang_comms;
  for (const DecisionWait& w : d.waits) {
    if (std::find(w.ranks.begin(), w.ranks.end(), rank) != w.ranks.end()) {
      ids.push_back(w.comm_id);
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Follow FollowDecisionText(std::string_view text, uint64_t job, int64_t onset_wall_ns, int rank,
                          std::vector<uint64_t>* comms, std::string* error) {
  Decision d;
  if (!ParseDecision(text, &d, error)) return Follow::kIgnored;
  if (d.job != job) {
    *error = "a decision of another job";
    return Follow::kIgnored;
  }
  // Only a look taken while this rank already waited saw its wait (and is not an earlier
  // incident's).
  if (d.stage != DecisionStage::kHang || d.written_wall_ns < onset_wall_ns) return Follow::kWait;
  *comms = CommsToAbort(d, rank);
  return Follow::kAct;
}

int ReadSmallFile(const std::string& path, std::string* text) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return errno;
  text->clear();
  char buf[4096];
  while (text->size() <= kMaxDecisionBytes) {
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

}  // namespace ncclscope::plugin
