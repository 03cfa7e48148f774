#include "exporters/timeline/timeline_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "exporters/measures/operation_size.h"
#include "exporters/timeline/clock_bound.h"
#include "exporters/timeline/rank_records.h"
#include "exporters/timeline/rank_writer.h"
#include "hang_detector/verdicts/verdict.h"
#include "trace/nccl_names.h"

namespace ncclscope::exporters::timeline {

namespace {

// The verdicts naming each rank (their culprits), with the evidence record cited for that rank.
std::unordered_map<int, std::vector<Mark>> MarksByRank(const hang_detector::Analysis* analysis) {
  std::unordered_map<int, std::vector<Mark>> marks;
  if (analysis == nullptr) return marks;
  for (const hang_detector::Verdict& v : analysis->verdicts) {
    if (v.cls == hang_detector::VerdictClass::kHealthy) continue;
    for (int rank : v.culprits) {
      Mark m{&v, std::nullopt};
      for (const hang_detector::Evidence& e : v.evidence) {
        if (e.rank == rank && e.has_record) {
          m.record_index = e.record_index;
          break;
        }
      }
      marks[rank].push_back(m);
    }
  }
  return marks;
}

void AddToClockBound(const FileEntry& file, const FileRecords& records, bool reference,
                     ClockBound* bound) {
  for (const StoredRecord& r : records.calls()) {
    const RecordData& d = r.data;
    if (!trace::IsCollective(static_cast<OpType>(d.op)) || d.seq == 0 || d.t_device_done_ns <= 0) {
      continue;
    }
    const int64_t enter = d.t_enter_ns + file.wall_offset;
    const int64_t done = d.t_device_done_ns + file.wall_offset;
    if (reference) {
      bound->AddReference(d.comm_id, d.seq, enter, done);
    } else {
      bound->AddOther(file.info.host, d.comm_id, d.seq, enter, done);
    }
  }
}

// Where operation around_seq of around_comm happened, on every selected rank that has it: one
// more pass over the files, reading only that operation's records.
class AroundScan final : public trace::RingVisitor {
 public:
  AroundScan(const std::string& comm, uint64_t seq) : comm_(comm), seq_(seq) {}
  void BeginFile(const RingInfo& info) override {
    offset_ = WallOffset(info);
    ids_.clear();
    for (const trace::CommInfo& c : info.comms) {
      if (CommMatches(c, comm_)) ids_.push_back(c.id);
    }
  }
  void Records(const StoredRecord* batch, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      const RecordData& d = batch[i].data;
      const auto op = static_cast<OpType>(d.op);
      if (d.seq != seq_ || !(trace::IsCollective(op) || trace::IsP2P(op)) ||
          std::find(ids_.begin(), ids_.end(), d.comm_id) == ids_.end()) {
        continue;
      }
      first = std::min(first, d.t_enter_ns + offset_);
      last = std::max({last, d.t_enter_ns + offset_, d.t_exit_ns + offset_,
                       d.t_device_done_ns > 0 ? d.t_device_done_ns + offset_ : INT64_MIN});
    }
  }
  void EndFile(const RingInfo&) override {}
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;

 private:
  std::string comm_;
  uint64_t seq_;
  int64_t offset_ = 0;
  std::vector<uint64_t> ids_;
};

bool AroundWindow(RingSource& source, const std::vector<FileEntry>& files,
                  const TimelineOptions& options, std::pair<int64_t, int64_t>* window,
                  std::string* error) {
  AroundScan scan(options.around_comm, options.around_seq);
  for (const FileEntry& f : files) {
    if (std::none_of(f.info.comms.begin(), f.info.comms.end(), [&](const trace::CommInfo& c) {
          return CommMatches(c, options.around_comm);
        })) {
      continue;
    }
    std::string ignored;  // an unreadable file is reported by the pass that writes
    source.Visit(f.name, 0, &scan, &ignored);
  }
  if (scan.first == INT64_MAX) {
    *error = fmt::format("no selected rank recorded operation #{} of '{}'", options.around_seq,
                         options.around_comm);
    return false;
  }
  const auto margin = static_cast<int64_t>(options.around_margin_s * 1e9);
  *window = {scan.first - margin, scan.last + margin};
  return true;
}

// A rank's counts (written into a part) into the whole trace's.
void Accumulate(const TimelineSummary& part, TimelineSummary* into) {
  into->ranks_written += part.ranks_written;
  into->host_slices += part.host_slices;
  into->device_slices += part.device_slices;
  into->open_slices += part.open_slices;
  into->verdict_marks += part.verdict_marks;
}

constexpr const char* kDescription =
    "ncclscope timeline. One process per rank (global rank as pid): a track per host thread "
    "with a slice per NCCL call (entry to return), a track per communicator x CUDA stream with a "
    "slice per operation's device execution (from its kernel start as the profiler saw it, else "
    "from when the call was made and the stream was free, to its device completion as the host "
    "observed it), an operations-in-flight counter, and the verdicts naming the rank. Arrows join "
    "one collective's device slices across ranks and a send with its receive. Slices that never "
    "ended are open. Times: CLOCK_REALTIME of each host, from each ring file's "
    "(realtime, monotonic) pair; see clock_* in the metadata for how well hosts agree.";

}  // namespace

uint64_t CollectiveFlowId(uint64_t comm_id, uint64_t seq) {
  const uint64_t id = Mix(comm_id ^ Mix(seq ^ 0xC011EC7ull));
  return id == 0 ? 1 : id;
}

uint64_t P2pFlowId(uint64_t comm_id, int from, int to, uint64_t seq) {
  const uint64_t ends =
      (static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32) | static_cast<uint32_t>(to);
  const uint64_t id = Mix(comm_id ^ Mix(seq ^ Mix(ends)));
  return id == 0 ? 1 : id;
}

bool WriteTimeline(RingSource& source, const TimelineOptions& options, TimelineSink* sink,
                   TimelineSummary* summary, std::string* error) {
  std::string list_error;
  const std::vector<std::string> names = source.List(&list_error);
  if (names.empty()) {
    *error = list_error.empty() ? "no ring file (*.ring)" : list_error;
    return false;
  }
  // Headers first: which files, in what order, and the trace's origin, before any event.
  std::vector<FileEntry> files;
  for (const std::string& name : names) {
    RingInfo info;
    trace::RingHeaderCollector header(&info);
    std::string why;
    if (!source.Visit(name, std::numeric_limits<uint64_t>::max(), &header, &why)) {
      summary->errors.push_back(why);
      continue;
    }
    ++summary->files;
    if (info.global_rank >= 0 && !RankSelected(options, info.global_rank)) continue;
    if (info.global_rank < 0 && !options.ranks.empty()) continue;
    if (!options.comm.empty() &&
        std::none_of(info.comms.begin(), info.comms.end(),
                     [&](const trace::CommInfo& c) { return CommMatches(c, options.comm); })) {
      continue;
    }
    files.push_back({name, info, WallOffset(info)});
  }
  if (files.empty()) {
    if (summary->files == 0) {
      *error = "no readable ring file" +
               (summary->errors.empty() ? std::string() : ": " + summary->errors.front());
    } else if (!options.comm.empty()) {
      *error = "no selected rank has a communicator named '" + options.comm + "'";
    } else {
      *error = "no ring file of the selected ranks";
    }
    return false;
  }
  // Ranks in order, files without one last. The first rank's host is the clock reference: its
  // files are read first so that the others can be compared with its collectives.
  std::stable_sort(files.begin(), files.end(), [](const FileEntry& a, const FileEntry& b) {
    const int ra = a.info.global_rank < 0 ? INT32_MAX : a.info.global_rank;
    const int rb = b.info.global_rank < 0 ? INT32_MAX : b.info.global_rank;
    return ra != rb ? ra < rb : a.info.pid < b.info.pid;
  });
  const std::string reference_host = files.front().info.host;
  const bool several_hosts = std::any_of(files.begin(), files.end(), [&](const FileEntry& f) {
    return f.info.host != reference_host;
  });
  std::stable_partition(files.begin(), files.end(),
                        [&](const FileEntry& f) { return f.info.host == reference_host; });
  int64_t origin = INT64_MAX;
  for (const FileEntry& f : files) origin = std::min(origin, f.info.start_realtime_ns);
  std::pair<int64_t, int64_t> window = {INT64_MIN, INT64_MAX};
  if (!options.around_comm.empty()) {
    if (!AroundWindow(source, files, options, &window, error)) return false;
  } else {
    if (options.from_s) window.first = origin + static_cast<int64_t>(*options.from_s * 1e9);
    if (options.to_s) window.second = origin + static_cast<int64_t>(*options.to_s * 1e9);
  }
  sink->Begin(origin, kDescription);

  const auto marks = MarksByRank(options.analysis);
  static const std::vector<Mark> kNoMarks;
  auto marks_of = [&](const FileEntry& f) -> const std::vector<Mark>& {
    const auto m = marks.find(f.info.global_rank);
    return m == marks.end() ? kNoMarks : m->second;
  };
  std::vector<std::unordered_set<uint64_t>> wanted(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    for (const Mark& mark : marks_of(files[i])) {
      if (mark.record_index) wanted[i].insert(*mark.record_index);
    }
  }
  // Files are read (mapped, copied, indexed) on threads of their own, kDepth at a time. When the
  // sink can take parts (Perfetto), each thread also writes its rank into a part of its own and
  // this thread appends the parts in file order; otherwise (JSON) this thread writes every rank
  // while the next files are read. Memory stays a few files' records whatever the job's size.
  struct FileWork {
    std::unique_ptr<FileRecords> records;
    bool ok = false;
    std::string why;
    std::unique_ptr<TimelineSink> part;  // null: this thread writes the rank
    TimelineSummary summary;
  };
  auto work = [&](size_t i, std::unique_ptr<TimelineSink> part) {
    FileWork w;
    w.records = std::make_unique<FileRecords>(&wanted[i]);
    w.ok = source.Visit(files[i].name, 0, w.records.get(), &w.why);
    if (w.ok && part != nullptr) {
      WriteRank(files[i], *w.records, i, options, window, marks_of(files[i]), part.get(),
                &w.summary);
    }
    w.part = std::move(part);
    return w;
  };
  constexpr size_t kDepth = 2;  // this machine's cores; more only adds memory
  std::deque<std::future<FileWork>> in_flight;
  size_t launched = 0;
  auto top_up = [&] {
    while (launched < files.size() && in_flight.size() < kDepth) {
      in_flight.push_back(std::async(std::launch::async, work, launched, sink->NewPart()));
      ++launched;
    }
  };
  ClockBound bound;
  top_up();
  for (size_t i = 0; i < files.size(); ++i) {
    FileWork w = in_flight.front().get();
    in_flight.pop_front();
    top_up();
    const FileEntry& f = files[i];
    if (!w.ok) {
      summary->errors.push_back(w.why);  // gone or damaged since its header was read
      continue;
    }
    // One host: every rank shares its clock, nothing to bound.
    if (several_hosts) AddToClockBound(f, *w.records, f.info.host == reference_host, &bound);
    if (w.part != nullptr) {
      sink->AppendPart(w.part.get());
      Accumulate(w.summary, summary);
    } else {
      WriteRank(f, *w.records, i, options, window, marks_of(f), sink, summary);
    }
  }

  const ClockBound::Result clocks = bound.Get();
  summary->clock_reference_host = reference_host;
  summary->clock_hosts = clocks.hosts + 1;
  summary->clock_bounded_hosts = clocks.bounded_hosts;
  summary->clock_bound_ns = clocks.max_bound_ns;
  const std::string clock_note =
      clocks.hosts == 0
          ? "one host: every rank shares its clock"
          : fmt::format(
                "{} of {} other hosts bounded against {} by shared collectives; the "
                "largest bound is {} ns ({}){}",
                clocks.bounded_hosts, clocks.hosts, reference_host, clocks.max_bound_ns,
                clocks.worst_host.empty() ? "none" : clocks.worst_host,
                clocks.bounded_hosts < clocks.hosts
                    ? "; hosts not bounded shared no completed collective with it"
                    : "");
  const std::string window_note =
      window.first == INT64_MIN && window.second == INT64_MAX
          ? std::string("whole job")
          : fmt::format(
                "{:.6f} s to {:.6f} s after the origin{}",
                window.first == INT64_MIN ? 0.0 : (window.first - origin) * 1e-9,
                window.second == INT64_MAX ? -1.0 : (window.second - origin) * 1e-9,
                options.around_comm.empty()
                    ? std::string()
                    : fmt::format(" (around #{} of {})", options.around_seq, options.around_comm));
  const std::vector<Arg> details = {
      Arg::Int("files", static_cast<int64_t>(summary->files)),
      Arg::Int("ranks", static_cast<int64_t>(summary->ranks_written)),
      Arg::Int("unreadable_files", static_cast<int64_t>(summary->errors.size())),
      Arg::Str("clock_reference_host", reference_host),
      Arg::Int("clock_hosts", summary->clock_hosts),
      Arg::Int("clock_bounded_hosts", clocks.bounded_hosts),
      Arg::Int("clock_bound_ns", clocks.max_bound_ns),
      Arg::Str("clock_alignment", clock_note),
      Arg::Str("comm_filter", options.comm),
      Arg::Str("window", window_note),
  };
  return sink->Finish(details, error);
}

}  // namespace ncclscope::exporters::timeline
