#include "hang_detector/incident/incident_lifecycle.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "hang_detector/incident/incident_key.h"

namespace ncclscope::hang_detector {
namespace {

// The verdict an incident is about: the analysis' headline when it is hang-class (the correlator
// puts confirmed hangs first), else none.
const Verdict* Headline(const Analysis& a) {
  if (!a.usable || a.verdicts.empty() || !IsHang(a.verdicts.front().cls)) return nullptr;
  return &a.verdicts.front();
}

void SortUnique(std::vector<uint64_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// What every member aborts, and where the waiting ranks wait, as the analysis shows it; merged
// into what the record already lists (more ranks block as a hang goes on, and a rank that aborted
// stays listed).
void AddAbortTargets(const Analysis& a, IncidentRecord* r) {
  for (const Verdict& v : a.verdicts) {
    if (IsConfirmedHang(v) && v.comm_id != 0) r->hang_comms.push_back(v.comm_id);
  }
  SortUnique(&r->hang_comms);
  for (const WaitingOn& w : a.waiting) {
    std::vector<int> ranks;
    for (const int rank : w.issued) {
      if (rank >= 0 && rank <= kMaxIncidentRank) ranks.push_back(rank);
    }
    if (ranks.empty()) continue;
    auto same = std::find_if(r->waits.begin(), r->waits.end(),
                             [&](const IncidentWait& x) { return x.comm_id == w.comm_id; });
    if (same == r->waits.end()) {
      r->waits.push_back({w.comm_id, {}});
      same = std::prev(r->waits.end());
    }
    same->ranks.insert(same->ranks.end(), ranks.begin(), ranks.end());
    std::sort(same->ranks.begin(), same->ranks.end());
    same->ranks.erase(std::unique(same->ranks.begin(), same->ranks.end()), same->ranks.end());
  }
}

// The incident's identity from its headline verdict.
void Identify(const Verdict& v, IncidentRecord* r) {
  r->incident = IncidentKey(v);
  r->cls = VerdictClassName(v.cls);
  r->comm_id = v.comm_id;
  r->comm_name = v.comm_name;
  r->op = v.op.empty() ? "-" : v.op;
  r->seq = v.seq;
  r->culprits.clear();
  for (const int c : v.culprits) {
    if (c >= 0 && c <= kMaxIncidentRank) r->culprits.push_back(c);
  }
  r->why = v.confirmed_by;
}

void Confirm(const Verdict& v, const Analysis& a, int64_t now, IncidentRecord* r) {
  Identify(v, r);
  r->stage = IncidentStage::kHang;
  r->how = v.confirmed_by_time ? ConfirmedHow::kTime : ConfirmedHow::kProof;
  r->confirmed_wall_ns = now;
  r->resolved_wall_ns = 0;
  AddAbortTargets(a, r);
}

void Resolve(int64_t now, IncidentRecord* r) {
  r->stage = IncidentStage::kResolved;
  r->resolved_wall_ns = now;
  // Nothing is to be aborted for an incident that is over.
  r->hang_comms.clear();
  r->waits.clear();
}

// A new incident: its onset is when its victims began to wait.
void Open(const Verdict& v, const Analysis& a, int64_t now, IncidentRecord* r) {
  r->how = ConfirmedHow::kNot;
  r->confirmed_wall_ns = 0;
  r->resolved_wall_ns = 0;
  r->hang_comms.clear();
  r->waits.clear();
  r->passes = 0;
  r->onset_wall_ns = now - static_cast<int64_t>(std::max(0.0, v.since_s) * 1e9);
  if (v.confirmed) {
    Confirm(v, a, now, r);
  } else {
    Identify(v, r);
    r->stage = IncidentStage::kSuspect;
  }
}

std::string Clock(int64_t wall_ns) {
  const time_t t = static_cast<time_t>(wall_ns / 1'000'000'000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d UTC", tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

}  // namespace

IncidentStep Advance(const IncidentRecord& prev, const Analysis& a, int64_t now_wall_ns) {
  IncidentStep s{prev, IncidentEvent::kNothing};
  IncidentRecord& r = s.next;
  const Verdict* head = Headline(a);
  switch (prev.stage) {
    case IncidentStage::kHang:
      if (head != nullptr) {
        // Still stuck: the identity stays what was confirmed; what to abort may grow.
        AddAbortTargets(a, &r);
      } else if (!prev.abort_mode && a.usable) {
        Resolve(now_wall_ns, &r);
        s.event = IncidentEvent::kResolved;
      }
      return s;
    case IncidentStage::kSuspect:
      if (!a.usable) return s;  // nothing readable says nothing about the job
      if (head == nullptr) {
        Resolve(now_wall_ns, &r);
        s.event = IncidentEvent::kResolved;
      } else if (head->confirmed) {
        Confirm(*head, a, now_wall_ns, &r);
        s.event = IncidentEvent::kConfirmed;
      } else {
        // The same wait seen later: more ranks block, the headline may change shape. The onset
        // stays the incident's.
        Identify(*head, &r);
      }
      return s;
    case IncidentStage::kNone:
    case IncidentStage::kResolved:
      if (head == nullptr) return s;
      Open(*head, a, now_wall_ns, &r);
      s.event = head->confirmed ? IncidentEvent::kConfirmed : IncidentEvent::kSuspected;
      return s;
  }
  return s;
}

IncidentStep OnLocalProgress(const IncidentRecord& prev, bool aborted_here, int64_t now_wall_ns) {
  IncidentStep s{prev, IncidentEvent::kNothing};
  if (aborted_here) return s;
  const bool resolves = prev.stage == IncidentStage::kSuspect ||
                        (prev.stage == IncidentStage::kHang && !prev.abort_mode);
  if (!resolves) return s;
  Resolve(now_wall_ns, &s.next);
  s.event = IncidentEvent::kResolved;
  return s;
}

void ApplyIncident(const IncidentRecord& r, int64_t now_wall_ns, Analysis* a) {
  if (r.stage == IncidentStage::kNone) return;
  IncidentView& view = a->incident;
  view.key = Hex16(r.incident);
  view.stage = IncidentStageName(r.stage);
  view.how = r.how == ConfirmedHow::kNot ? "" : ConfirmedHowName(r.how);
  view.onset_wall_ns = r.onset_wall_ns;
  view.confirmed_wall_ns = r.confirmed_wall_ns;
  view.resolved_wall_ns = r.resolved_wall_ns;
  view.resolution = Resolution(r);
  view.holder_rank = r.holder_rank;
  view.abort_mode = r.abort_mode;
  if (r.stage != IncidentStage::kHang) return;
  Verdict* target = nullptr;
  for (Verdict& v : a->verdicts) {
    if (!IsHang(v.cls)) continue;
    if (IncidentKey(v) == r.incident) {
      target = &v;
      break;
    }
    if (target == nullptr) target = &v;
  }
  if (target == nullptr) {
    a->input.notes.push_back("the job's watchdog confirmed a hang at " +
                             Clock(r.confirmed_wall_ns) + " (" + r.cls + " " + r.op + " #" +
                             std::to_string(r.seq) + ") that this look no longer shows");
    return;
  }
  if (target->confirmed) return;
  char ago[64];
  std::snprintf(ago, sizeof ago, "%.0f s ago",
                std::max(0.0, static_cast<double>(now_wall_ns - r.confirmed_wall_ns) * 1e-9));
  target->confirmed = true;
  target->confirmed_by_time = r.how == ConfirmedHow::kTime;
  target->confirm_after_s = 0;
  target->confirmed_by = "confirmed by the watchdog of rank " + std::to_string(r.holder_rank) +
                         " at " + Clock(r.confirmed_wall_ns) + " (" + ago + "): " + r.why;
  std::stable_partition(a->verdicts.begin(), a->verdicts.end(),
                        [](const Verdict& v) { return IsConfirmedHang(v); });
}

bool OfThisRun(const IncidentRecord& r, uint64_t job_key, int64_t run_start_wall_ns) {
  return r.job == job_key && r.written_wall_ns >= run_start_wall_ns;
}

std::string Resolution(const IncidentRecord& r) {
  if (r.stage != IncidentStage::kResolved) return "";
  switch (r.how) {
    case ConfirmedHow::kNot:
      return "a suspect that progressed";
    case ConfirmedHow::kTime:
      return "confirmed by time, then progressed";
    case ConfirmedHow::kProof:
      return "confirmed by proof, then progressed";
  }
  return "";
}

}  // namespace ncclscope::hang_detector
