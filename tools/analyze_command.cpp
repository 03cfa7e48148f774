// `ncclscope analyze DIR... [--json] [--watch]`: reads every ring file of a job (live or after it
// died; several directories: each node's, read as one job) and prints the correlator's verdicts;
// --watch re-analyses every second until the job ends.
// `ncclscope analyze --from SRC... [DIR]`: the same from node digests (exporters' /digest, digest
// files, hostfiles; docs/digest.md), plus the ring files of DIR when given.
// Exit code: 0 healthy, 1 straggler or numerics (nan-origin, corrupt-output), 2 hang/deadlock/
// desync/dead, 3 unusable input, 4 suspect (hang_detector::ExitCode).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "exporters/multinode/digest_job.h"
#include "exporters/sources/job_input.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/incident/incident_files.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tools/commands.h"
#include "tools/trace_dirs.h"
#include "trace/clock.h"
#include "trace/flight_recorder/fr_dir.h"
#include "trace/ring_reader.h"
#include "trace/trace_set.h"

namespace ncclscope::tools {
namespace {

namespace hd = hang_detector;

struct AnalyzeCliOptions {
  std::vector<std::string> dirs;
  bool json = false;
  bool verbose = false;
  bool job_ended = false;
  bool no_process_checks = false;
  double stall_s = 2.0;
  double stale_s = 2.0;
  bool watch = false;
  bool timing = false;
  int read_threads = 2;
  double interval_s = 1.0;
  std::string job;  // empty: the job of the newest heartbeat
  std::vector<std::string> from;
  double fetch_timeout_s = 2.0;
};

hd::AnalyzeOptions CorrelatorOptions(const AnalyzeCliOptions& o, const hd::ProcessProbe* probe) {
  hd::AnalyzeOptions options;
  options.now_wall_ns = trace::RealtimeNs();
  options.probe = o.no_process_checks ? nullptr : probe;
  options.stall_s = o.stall_s;
  options.stale_s = o.stale_s;
  options.job_ended = o.job_ended;
  return options;
}

// Why nothing could be analysed: no ring file at all, or only ones that cannot be read.
std::string UnusableReason(const std::vector<std::string>& dirs, const hd::Analysis& a, bool fr) {
  const std::string dir = NameDirs(dirs);
  const std::vector<std::string>& bad = a.input.unreadable;
  if (bad.empty()) return dir + ": no ring file (*.ring) in it, nor a PyTorch Flight Recorder dump";
  std::string why = dir +
                    (fr ? ": no readable Flight Recorder dump: " : ": no readable ring file: ") +
                    std::to_string(bad.size()) + (fr ? " dump(s)" : " *.ring file(s)") +
                    ", none readable; " + bad.front();
  if (bad.size() > 1) why += " (and " + std::to_string(bad.size() - 1) + " more)";
  return why;
}

void Print(const AnalyzeCliOptions& o, const hd::Analysis& a, int indent, bool fr = false) {
  // On stderr in both forms, so a script reading the JSON still sees why the exit code is 3.
  if (!a.usable) {
    std::cerr << "ncclscope analyze: "
              << (o.from.empty()
                      ? UnusableReason(o.dirs, a, fr)
                      : "no rank in any digest" +
                            (o.dirs.empty() ? "" : " nor ring file in " + NameDirs(o.dirs)))
              << "\n";
  }
  if (o.json) {
    std::cout << hd::RenderJson(a, indent) << "\n";
  } else {
    std::cout << hd::RenderText(a, o.verbose);
  }
  std::cout.flush();
}

// Streams the directories into the compact index (JobIndex::FromDirs): a 4096-rank job never has
// all its full records in memory at once.
// A directory of PyTorch Flight Recorder dumps (no ring file in it) is read the same way, as a
// post-mortem (exporters/sources/job_input.h).
int Analyze(const AnalyzeCliOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  const std::optional<exporters::JobInput> input = exporters::OpenJobInput(o.dirs, o.job, &error);
  if (!input) {
    std::cerr << "ncclscope analyze: " << error << "\n";
    return 3;
  }
  const std::optional<hd::JobIndex> index =
      exporters::IndexJobInput(*input, o.dirs, o.job, o.read_threads, &error);
  if (!index) {
    std::cerr << "ncclscope analyze: " << error << "\n";
    return 3;
  }
  for (const std::string& note : input->notes) std::cerr << "ncclscope analyze: " << note << "\n";
  const auto probe = hd::MakeLinuxProcessProbe();
  const auto t1 = std::chrono::steady_clock::now();
  hd::AnalyzeOptions options = CorrelatorOptions(o, probe.get());
  exporters::AdjustForInput(*input, &options);
  hd::Analysis a = hd::Analyze(*index, options);
  exporters::NameRecordsAsInput(*input, &a);
  // A hang the job's watchdog confirmed is one fact: never shown as a suspect again.
  // Each node's directory holds its own watchdog's record of the job's incident.
  if (input->fr == nullptr) {
    for (const std::string& dir : o.dirs) hd::ApplyRecordedIncident(dir, options.now_wall_ns, &a);
  }
  const auto t2 = std::chrono::steady_clock::now();
  Print(o, a, 2, input->fr != nullptr);
  if (o.timing && input->fr != nullptr) {
    // Dumps are decoded and indexed in one pass per file: no read/place split to report.
    const double ingest_s = std::chrono::duration<double>(t1 - t0).count();
    std::fprintf(stderr,
                 "timing: %zu Flight Recorder dumps, %llu records decoded and indexed in %.3f s "
                 "(%.0f records/s, %d threads); analysis %.3f s\n",
                 index->files().size(), static_cast<unsigned long long>(index->stats().records),
                 ingest_s,
                 ingest_s > 0 ? static_cast<double>(index->stats().records) / ingest_s : 0.0,
                 o.read_threads, std::chrono::duration<double>(t2 - t1).count());
  } else if (o.timing) {
    const hd::IngestStats& s = index->stats();
    const double ingest_s = std::chrono::duration<double>(t1 - t0).count();
    std::fprintf(stderr,
                 "timing: %llu files, %llu records ingested in %.3f s (%.0f records/s; read %.3f s "
                 "on %d threads, place %.3f s); analysis %.3f s\n",
                 static_cast<unsigned long long>(s.files),
                 static_cast<unsigned long long>(s.records), ingest_s,
                 ingest_s > 0 ? static_cast<double>(s.records) / ingest_s : 0.0, s.read_s,
                 s.threads, s.place_s, std::chrono::duration<double>(t2 - t1).count());
  }
  return hd::ExitCode(a);
}

// From node digests fetched in parallel (and the ring files of DIR, when given): one correlation
// of the whole job as analyze of a directory holding every rank would give. A source that fails is
// an input line, and its ranks are unknown; only when no source at all can be used does it end
// with exit code 3.
int AnalyzeFrom(const AnalyzeCliOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  exporters::DigestJobOptions options;
  options.fetch.timeout_s = o.fetch_timeout_s;
  options.local_dir = o.dirs.empty() ? "" : o.dirs.front();  // one at most (checked)
  options.job = o.job;
  exporters::DigestJob job;
  std::string error;
  if (!exporters::AssembleDigestJob(o.from, options, &job, &error)) {
    std::cerr << "ncclscope analyze: " << error << "\n";
    return 3;
  }
  if (!job.index) {
    std::cerr << "ncclscope analyze: none of " << job.sources
              << " digest source(s) could be used\n";
    for (const std::string& e : job.source_errors) std::cerr << "  " << e << "\n";
    return 3;
  }
  for (const std::string& note : job.notes) std::cerr << "ncclscope analyze: " << note << "\n";
  const auto probe = hd::MakeLinuxProcessProbe();
  const auto t1 = std::chrono::steady_clock::now();
  const hd::Analysis a = hd::Analyze(*job.index, CorrelatorOptions(o, probe.get()));
  const auto t2 = std::chrono::steady_clock::now();
  Print(o, a, 2);
  if (o.timing) {
    std::fprintf(stderr,
                 "timing: %zu of %zu digest source(s) and %zu local file(s), %llu records, "
                 "fetched and decoded in %.3f s (slowest fetch %.3f s: the clock bound); "
                 "analysis %.3f s\n",
                 job.sources_ok, job.sources, job.local_files,
                 static_cast<unsigned long long>(job.index->stats().records),
                 std::chrono::duration<double>(t1 - t0).count(), job.max_round_trip_s,
                 std::chrono::duration<double>(t2 - t1).count());
  }
  return hd::ExitCode(a);
}

// What makes two analyses "the same verdict" for --watch: class, place and culprits, not the
// growing wait times.
std::string VerdictKey(const hd::Analysis& a) {
  std::string key = a.usable ? "" : "unusable";
  for (const hd::Verdict& v : a.verdicts) {
    key += std::string(hd::VerdictClassName(v.cls)) + " " + hd::HexCommId(v.comm_id) + " " + v.op +
           " " + std::to_string(v.seq) + " [";
    for (int r : v.culprits) key += std::to_string(r) + ",";
    key += "];";
  }
  return key;
}

// How long --watch gives ring files that cannot be read yet before calling them damaged.
constexpr std::chrono::seconds kCreationGrace{1};

bool DirIsAbsent(const std::string& dir) {
  struct stat st {};
  return stat(dir.c_str(), &st) != 0 && errno == ENOENT;
}

// Live view: prints the analysis whenever its verdict changes (JSON: one line per change), until
// no writer process is left (the correlator's post-mortem mode) or every rank finished. Waits for
// the directory and its first ring file, so it can be started together with the job; exits 3 when
// the directory cannot be read or holds only ring files that stay unreadable.
int Watch(const AnalyzeCliOptions& o) {
  const std::string& dir = o.dirs.front();  // exactly one (checked)
  // Flight Recorder dumps are written once, when the job failed: there is nothing to watch.
  std::string not_yet;
  if (const auto input = exporters::OpenJobInput(o.dirs, o.job, &not_yet);
      input && input->fr != nullptr) {
    return Analyze(o);
  }
  const auto probe = hd::MakeLinuxProcessProbe();
  const auto period = std::chrono::duration<double>(o.interval_s);
  std::string shown;
  bool said_waiting = false;
  std::optional<std::chrono::steady_clock::time_point> unreadable_since;
  for (;;) {
    trace::TraceSet set;
    std::string error;
    const bool readable = trace::ReadTraceDir(dir, &set, &error);
    set.job = o.job;
    // A directory the job has yet to create is waited for; one that exists but cannot be listed
    // (not a directory, no permission) will not get better.
    if (!readable && !DirIsAbsent(dir)) {
      std::cerr << "ncclscope analyze: " << error << "\n";
      return 3;
    }
    // A writer creates its file and fills the header in one go (milliseconds), so ring files that
    // all stay unreadable across two looks a second apart are damaged, not being created.
    const bool only_unreadable = readable && set.files.empty() && !set.errors.empty();
    if (!only_unreadable) {
      unreadable_since.reset();
    } else if (!unreadable_since) {
      unreadable_since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - *unreadable_since >= kCreationGrace) {
      const hd::Analysis a = hd::Analyze(set, CorrelatorOptions(o, probe.get()));
      Print(o, a, o.json ? 0 : 2);
      return hd::ExitCode(a);
    }
    if (!readable || set.files.empty()) {
      if (!said_waiting) {
        std::cerr << "ncclscope analyze: waiting for ring files in " << dir << "\n";
        said_waiting = true;
      }
      std::this_thread::sleep_for(
          only_unreadable ? std::min<std::chrono::duration<double>>(period, kCreationGrace)
                          : period);
      continue;
    }
    const hd::AnalyzeOptions options = CorrelatorOptions(o, probe.get());
    hd::Analysis a = hd::Analyze(set, options);
    hd::ApplyRecordedIncident(dir, options.now_wall_ns, &a);
    const std::string key = VerdictKey(a);
    const bool ended = a.usable && a.input.post_mortem;
    if (key != shown) {
      Print(o, a, o.json ? 0 : 2);
      shown = key;
    }
    if (ended || o.job_ended) return hd::ExitCode(a);
    std::this_thread::sleep_for(period);
  }
}

// A --from value that is a trace directory rather than digests: a directory with no *.digest file
// but ring files or Flight Recorder dumps (a node's directory copied for a post-mortem).
bool IsTraceDir(const std::string& from) {
  std::error_code ec;
  if (!std::filesystem::is_directory(from, ec)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(from, ec)) {
    if (entry.path().extension() == ".digest") return false;
  }
  std::string error;
  if (!trace::ListRingFiles(from, &error).empty()) return true;
  flight_recorder::FrDumpListing dumps;
  return flight_recorder::ListFrDumps(from, &dumps, &error) && !dumps.dumps.empty();
}

// The directories and digest sources of one run checked; false when they cannot go together.
bool CheckInputs(AnalyzeCliOptions* o) {
  if (o->dirs.empty() && o->from.empty()) {
    std::cerr << "ncclscope analyze: give a trace directory, or --from digest sources\n";
    return false;
  }
  // A node's directory given as --from is read as the directory it is, with the others.
  std::vector<std::string> digests;
  for (const std::string& from : o->from) {
    if (!IsTraceDir(from)) {
      digests.push_back(from);
      continue;
    }
    std::cerr << "ncclscope analyze: --from " << from
              << ": a trace directory (no *.digest file in it): read as `ncclscope analyze " << from
              << "` reads it\n";
    o->dirs.push_back(from);
  }
  o->from = std::move(digests);
  std::string error;
  if (!EachDirOnce(o->dirs, &error)) {
    std::cerr << "ncclscope analyze: " << error << "\n";
    return false;
  }
  if (!o->from.empty() && o->watch) {
    std::cerr << "ncclscope analyze: --watch reads a directory; with --from, run analyze "
                 "again (each run fetches every digest anew)\n";
    return false;
  }
  if (o->watch && o->dirs.size() > 1) {
    // Ring files are coherent on their own node only: a live job's other nodes are read through
    // their exporters.
    std::cerr << "ncclscope analyze: --watch reads one directory; to follow a job across nodes "
                 "while it runs, give --from its nodes' exporters or digests, and run analyze "
                 "again\n";
    return false;
  }
  if (!o->from.empty() && o->dirs.size() > 1) {
    std::cerr << "ncclscope analyze: with digests (--from), the ring files of one directory at "
                 "most are added (this host's); to correlate several nodes' directories, give "
                 "them without digests: ncclscope analyze DIR DIR...\n";
    return false;
  }
  return true;
}

}  // namespace

void RegisterAnalyzeCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "analyze", "Correlate the ranks of a job: hangs, desyncs, dead or frozen ranks, deadlocks");
  auto o = std::make_shared<AnalyzeCliOptions>();
  cmd->add_option("dir", o->dirs,
                  "Trace directory; or several, each node's of one job (copied for a "
                  "post-mortem), read as one job; with --from: one, the ring files of this host "
                  "to add");
  cmd->add_option("--from", o->from,
                  "Node digests to correlate instead of (or with) a directory: an exporter's URL "
                  "(http://host:port, /digest added), a digest file, a directory of *.digest "
                  "files, or a hostfile of host[:port] lines; repeatable (docs/digest.md). A "
                  "directory of ring files (no *.digest in it) is read as a trace directory")
      ->allow_extra_args(false);  // one value per --from: a DIR after it stays the directory
  cmd->add_option("--fetch-timeout", o->fetch_timeout_s,
                  "Seconds to connect to and fetch each digest; an exporter slower than that is "
                  "reported and its ranks are unknown")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o->json, "One JSON object: verdicts, waiting-on view, input report");
  cmd->add_flag("-v,--verbose", o->verbose, "Also print what every communicator waits on");
  cmd->add_flag("--job-ended", o->job_ended,
                "The launcher ended the job (timeout, scancel): judge ranks against each other, "
                "as of the job's last heartbeat");
  cmd->add_flag("--no-process-checks", o->no_process_checks,
                "Do not check writer pids on this host (the trace was copied from elsewhere)");
  cmd->add_option("--stall-after", o->stall_s, "Seconds a wait must last to count as a hang")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--stale-after", o->stale_s,
                  "Seconds without heartbeat that mean no progress (several heartbeat periods)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--timing", o->timing,
                "Print to stderr how long reading the files and analysing them took");
  cmd->add_option("--read-threads", o->read_threads, "Threads reading ring files in parallel")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option(
      "--job", o->job,
      "Correlate the ring files of this job only (the job id of `dump`'s headers); "
      "default: the job of the newest heartbeat, the others' files ignored with a note");
  cmd->add_flag("--watch", o->watch,
                "Re-analyse every --interval seconds and print the verdict whenever it changes, "
                "until every writer of the directory has ended; exit code of the last analysis");
  cmd->add_option("--interval", o->interval_s, "Seconds between analyses with --watch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->callback([=] {
    if (!CheckInputs(o.get())) {
      *exit_code = 3;
    } else if (!o->from.empty()) {
      *exit_code = AnalyzeFrom(*o);
    } else {
      *exit_code = o->watch ? Watch(*o) : Analyze(*o);
    }
  });
}

}  // namespace ncclscope::tools
