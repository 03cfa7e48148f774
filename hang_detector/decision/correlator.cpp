// Orchestrates the detectors and turns their candidate verdicts into the answer: symptoms of
// another verdict's culprit are dropped, dead and frozen culprits take over the verdicts they
// explain, verdicts that blame the same ranks are merged, and the root causes come first.
#include "hang_detector/decision/correlator.h"

#include <algorithm>
#include <climits>
#include <iterator>

#include "hang_detector/decision/program_order.h"
#include "hang_detector/decision/steps.h"
#include "hang_detector/detectors/nvtx_places.h"
#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/presence_files.h"

namespace ncclscope::hang_detector {
namespace {

void FillInput(const JobIndex& index, const Context& ctx, InputReport* in) {
  in->files = static_cast<int>(index.files().size());
  in->file_kind = index.file_kind();
  in->world_size = index.world_size();
  in->unreadable = index.errors();
  in->unreadable_ranks = index.unreadable_ranks();
  std::set_difference(index.missing_ranks().begin(), index.missing_ranks().end(),
                      in->unreadable_ranks.begin(), in->unreadable_ranks.end(),
                      std::back_inserter(in->missing_ranks));
  // What the index ignored as implausible (world sizes, sequence numbers beyond the ring).
  in->notes = index.notes();
  in->post_mortem = ctx.post_mortem;
  if (!index.files().empty()) {
    // One job's files (JobIndex keeps one): the newest run's restart count names it.
    in->job = index.files().front().snap->job_id;
    in->run_start_wall_ns = INT64_MAX;
    for (const RankFile& f : index.files()) {
      in->restart = std::max(in->restart, f.snap->restart);
      in->run_start_wall_ns = std::min(in->run_start_wall_ns, f.snap->start_realtime_ns);
    }
  }
  std::vector<int> seen, never_called;
  for (uint32_t f = 0; f < index.files().size(); ++f) {
    const trace::RingInfo& s = *index.files()[f].snap;
    const int rank = ctx.RankOf(f);
    if (IsPresence(index.files()[f])) never_called.push_back(rank);
    if (s.overwritten > 0) in->wrapped_ranks.push_back(rank);
    if (s.torn_records > 0) in->torn_ranks.push_back(rank);
    if (s.dropped_records > 0 || s.dropped_comms > 0) in->dropped_ranks.push_back(rank);
    seen.push_back(rank);
    if (index.files()[f].remote.has_value()) ++in->digest_ranks;
  }
  std::sort(seen.begin(), seen.end());
  in->ranks_seen =
      static_cast<int>(std::distance(seen.begin(), std::unique(seen.begin(), seen.end())));
  if (!never_called.empty()) {
    in->notes.push_back(RankList(never_called) + (never_called.size() == 1 ? " has" : " have") +
                        " not called NCCL: seen through the presence file written when " +
                        (never_called.size() == 1 ? "its process" : "their processes") +
                        " started");
  }
  if (in->ranks_seen < static_cast<int>(seen.size())) {
    in->notes.push_back(
        "several files claim the same rank (a restarted job in the same directory?)");
  }
  if (ctx.post_mortem && ctx.options.snapshot) {
    // Flight Recorder dumps carry no heartbeat: the newest dump is the last sign of the job.
    in->notes.push_back(
        "the files are a snapshot: times are relative to when the last rank wrote its file (the "
        "newest file's modification time)");
  } else if (ctx.post_mortem) {
    in->notes.push_back(
        "no writer process is alive: times are relative to the job's last heartbeat");
  }
  if (!in->wrapped_ranks.empty()) {
    in->notes.push_back(
        "wrapped rings: sequence numbers older than their oldest record are not compared");
  }
  if (index.unplaced_records() > 0) {
    in->notes.push_back(
        std::to_string(index.unplaced_records()) +
        " send/recv records on communicators missing from their comm table were skipped");
  }
}

bool Blocks(VerdictClass c) {
  return c == VerdictClass::kMissing || c == VerdictClass::kP2PDeadlock ||
         c == VerdictClass::kInitHang;
}

// A rank stuck waiting in one operation cannot issue the next: naming it as the culprit of
// another "never issued" is naming a symptom. Such culprits are set aside; a verdict left with none
// is dropped, unless every verdict would be (ranks waiting on each other across communicators).
void DropSymptoms(const Context& ctx, std::vector<Verdict>* verdicts) {
  auto causes = [&](const Verdict& v) {
    std::vector<int> left;
    for (int r : v.culprits) {
      if (!ctx.BlockedElsewhere(r, v)) left.push_back(r);
    }
    return left;
  };
  auto symptom = [&](const Verdict& v) {
    return Blocks(v.cls) && !v.tie && !v.culprits.empty() && causes(v).empty();
  };
  if (std::all_of(verdicts->begin(), verdicts->end(), symptom)) return;
  std::erase_if(*verdicts, symptom);
  for (Verdict& v : *verdicts) {
    if (!Blocks(v.cls) || v.tie) continue;
    std::vector<int> left = causes(v);
    if (left.size() == v.culprits.size()) continue;
    std::vector<int> stuck;
    for (int r : v.culprits) {
      if (!std::binary_search(left.begin(), left.end(), r)) stuck.push_back(r);
    }
    // The detectors name the culprit list as RankList writes it; the text must blame only those
    // left, and still say why the others are absent.
    const std::string before = RankList(v.culprits);
    if (const size_t at = v.summary.find(before); at != std::string::npos) {
      v.summary.replace(at, before.size(), RankList(left));
    }
    v.summary += stuck.size() == 1
                     ? " (" + RankList(stuck) + " is absent too, but only as it waits elsewhere)"
                     : " (" + RankList(stuck) + " are absent too, but only as they wait elsewhere)";
    v.culprits = left;
  }
}

int Priority(VerdictClass c) {
  switch (c) {
    case VerdictClass::kDead:
      return 0;
    case VerdictClass::kFrozen:
      return 1;
    case VerdictClass::kDesync:
      return 2;
    case VerdictClass::kP2PDeadlock:
      return 3;
    case VerdictClass::kInitHang:
      return 4;
    case VerdictClass::kMissing:
      return 5;
    case VerdictClass::kDeviceStall:
      return 6;
    // Numerics after every hang (a hang stops the job; these let it run on wrong numbers), before
    // stragglers (wrong beats slow). Corruption first: a flipped bit can become the NaN whose
    // origin nan-origin names.
    case VerdictClass::kCorruptOutput:
      return 7;
    case VerdictClass::kNanOrigin:
      return 8;
    case VerdictClass::kStraggler:
      return 9;
    case VerdictClass::kHealthy:
      return 10;
  }
  return 11;
}

// Waits that began within this much of each other began "together" (microseconds apart in
// practice: one rank's ops are issued back to back); among those, the one blocking the most ranks
// leads, which keeps the headline stable from run to run.
constexpr double kSameMomentS = 0.25;
// Program order is compared pairwise; beyond this many verdicts for one culprit (never seen: one
// per communicator it belongs to), the times alone pick the headline.
constexpr size_t kMaxOrdered = 64;

// One verdict per (class, culprits): a rank that never issued #N on tp usually never issued the
// following collectives on dp and world either; those become one-line "also" evidence. The classes
// of "a rank did not issue what others wait for" (missing, p2p-deadlock, init-hang) are one family:
// the pipeline neighbour of a rank stuck before tp #N waits for its send too, and that later wait
// must not headline over the earlier one.
VerdictClass Family(VerdictClass c) {
  return Blocks(c) ? VerdictClass::kMissing : c;
}

// Which verdicts of one culprit's group are about a collective that comes after another one of
// the group in the ranks' programs (program_order.h): those cannot be where the culprit stopped.
// All false when the programs cannot tell (or disagree all round).
std::vector<bool> LaterInProgram(const JobIndex& index, const std::vector<Verdict>& g) {
  std::vector<bool> later(g.size(), false);
  if (g.size() < 2 || g.size() > kMaxOrdered) return later;
  std::vector<CollectiveStand> stands(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i].cls == VerdictClass::kMissing) stands[i] = StandOn(index, g[i].comm_id, g[i].seq);
  }
  for (size_t i = 0; i < g.size(); ++i) {
    for (size_t j = i + 1; j < g.size(); ++j) {
      const Order o = ProgramOrder(stands[i], stands[j]);
      if (o == Order::kFirstBefore) later[j] = true;
      if (o == Order::kSecondBefore) later[i] = true;
    }
  }
  if (std::all_of(later.begin(), later.end(), [](bool b) { return b; }))
    later.assign(g.size(), false);
  return later;
}

// A straggler's verdicts are one slowness seen from each communicator it keeps waiting, not waits
// that began one after another: the one with the most victims leads (the first on a tie). Their
// onsets are not compared: each is measured in its communicator's own window, and a node's digest
// keeps fewer collectives of a busy communicator than its ring files, so an onset that noise moved
// early in one view is cut off in the other, and the headline would differ between them.
size_t MostVictims(const std::vector<Verdict>& g) {
  size_t lead = 0;
  for (size_t i = 1; i < g.size(); ++i) {
    if (g[i].victims.size() > g[lead].victims.size()) lead = i;
  }
  return lead;
}

void Merge(const JobIndex& index, std::vector<Verdict>* verdicts) {
  std::vector<std::vector<Verdict>> groups;
  for (Verdict& v : *verdicts) {
    const bool mergeable = v.cls != VerdictClass::kDesync && !v.tie;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const std::vector<Verdict>& g) {
      return mergeable && !g[0].tie && Family(g[0].cls) == Family(v.cls) &&
             g[0].culprits == v.culprits;
    });
    if (same == groups.end()) {
      groups.emplace_back().push_back(std::move(v));
    } else {
      same->push_back(std::move(v));
    }
  }
  std::vector<Verdict> merged;
  for (std::vector<Verdict>& g : groups) {
    const std::vector<bool> later = LaterInProgram(index, g);
    double oldest = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      if (!later[i]) oldest = std::max(oldest, g[i].since_s);
    }
    size_t lead = 0;
    while (later[lead]) ++lead;
    for (size_t i = lead + 1; i < g.size(); ++i) {
      if (later[i]) continue;
      const bool together = g[i].since_s >= oldest - kSameMomentS;
      const bool lead_together = g[lead].since_s >= oldest - kSameMomentS;
      if (together && (!lead_together || g[i].victims.size() > g[lead].victims.size())) lead = i;
    }
    if (g[0].cls == VerdictClass::kStraggler) lead = MostVictims(g);  // onsets are not compared
    Verdict primary = std::move(g[lead]);
    for (size_t i = 0; i < g.size(); ++i) {
      if (i == lead) continue;
      const Verdict& v = g[i];
      primary.victims.insert(primary.victims.end(), v.victims.begin(), v.victims.end());
      primary.unseen.insert(primary.unseen.end(), v.unseen.begin(), v.unseen.end());
      primary.unseen_count = std::max(primary.unseen_count, v.unseen_count);
      Evidence also;
      also.rank = v.victims.empty() ? -1 : v.victims.front();
      also.has_record = false;
      const std::string cls =
          v.cls == primary.cls ? "" : std::string(VerdictClassName(v.cls)) + ", ";
      also.text = "also: " + cls + v.comm_name + " " + v.op + " #" + std::to_string(v.seq) + ": " +
                  v.summary;
      if (primary.evidence.size() < 16) primary.evidence.push_back(std::move(also));
    }
    SortUnique(&primary.victims);
    SortUnique(&primary.unseen);
    primary.unseen_count = std::max(primary.unseen_count, static_cast<int>(primary.unseen.size()));
    merged.push_back(std::move(primary));
  }
  std::stable_sort(merged.begin(), merged.end(), [](const Verdict& a, const Verdict& b) {
    if (Priority(a.cls) != Priority(b.cls)) return Priority(a.cls) < Priority(b.cls);
    return a.since_s > b.since_s;
  });
  *verdicts = std::move(merged);
}

}  // namespace

Analysis Analyze(const trace::TraceSet& set, const AnalyzeOptions& options) {
  return Analyze(JobIndex(set), options);
}

Analysis Analyze(const JobIndex& index, const AnalyzeOptions& options) {
  Analysis a;
  Context ctx{index, options, {}, 0, false};
  AssessLiveness(&ctx);
  FillInput(index, ctx, &a.input);
  if (index.files().empty()) {
    a.usable = false;
    return a;
  }
  CheckInits(ctx, &a.verdicts);
  CheckCollectives(ctx, &a.verdicts, &a.waiting);
  CheckP2P(ctx, &a.verdicts);
  CheckStragglers(ctx, &a.verdicts);
  DropSymptoms(ctx, &a.verdicts);
  ApplyLiveness(ctx, &a.verdicts);
  Merge(index, &a.verdicts);
  ConfirmHangs(ctx, &a.verdicts);
  AddNumerics(ctx, &a.verdicts);
  LocatePlaces(ctx, &a.verdicts);
  if (a.verdicts.empty()) {
    Verdict healthy;
    healthy.summary = a.waiting.empty() ? "every issued operation completed"
                                        : "operations in flight, none stalled";
    a.verdicts.push_back(std::move(healthy));
  }
  return a;
}

}  // namespace ncclscope::hang_detector
