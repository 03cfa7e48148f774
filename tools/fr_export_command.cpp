// `ncclscope fr-export DIR -o OUTDIR [--version V] [--format pickle|json] [--buffer-size N]
// [--prefix P] [--job ID]`: one PyTorch Flight Recorder dump per rank of the job's ring files
// (trace/flight_recorder/ring_to_fr.h), for torch's analyzer (torchfrtrace OUTDIR) and other
// FR readers. Exit code: 0, or 3 when the input is unusable (no ring file, bad option, the output
// cannot be written).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/commands.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/fr_dump_versions.h"
#include "trace/flight_recorder/fr_write.h"
#include "trace/flight_recorder/ring_to_fr.h"
#include "trace/job_choice.h"
#include "trace/trace_set.h"

namespace ncclscope::tools {
namespace {

struct FrExportArgs {
  std::string dir;
  std::string out;
  std::string version = "2.10";
  std::string format = "pickle";
  size_t buffer_size = exporters::fr::kDefaultFrBufferSize;
  std::string prefix = exporters::fr::kDefaultFrPrefix;
  std::string job;
};

int FailFrExport(const std::string& message) {
  std::cerr << "ncclscope fr-export: " << message << "\n";
  return kUnusableInput;
}

int Run(const FrExportArgs& o) {
  const auto version = flight_recorder::ParseFrVersion(o.version);
  if (!version || version->major != 2 || *version < flight_recorder::fr_versions::kOldest) {
    return FailFrExport("--version '" + o.version +
                        "': a Flight Recorder dump version 2.2 or later (2.x)");
  }
  if (!exporters::fr::IsValidFrPrefix(o.prefix)) {
    return FailFrExport("--prefix '" + o.prefix + "': a file-name start without '/'");
  }
  trace::TraceSet set;
  std::string error;
  if (!trace::ReadTraceDir(o.dir, &set, &error)) return FailFrExport(error);
  for (const std::string& e : set.errors) std::cerr << "ncclscope fr-export: " << e << "\n";
  std::vector<const trace::RingInfo*> infos;
  for (const trace::RingSnapshot& f : set.files) infos.push_back(&f);
  const trace::JobChoice choice = trace::ChooseJob(infos, o.job);
  std::vector<const trace::RingSnapshot*> files;
  for (size_t i = 0; i < set.files.size(); ++i) {
    if (choice.keep[i] != 0) files.push_back(&set.files[i]);
  }
  if (files.empty()) {
    return FailFrExport(o.dir + ": no readable ring file" +
                        (o.job.empty() ? std::string() : " of job '" + o.job + "'"));
  }
  if (const std::string note = choice.Note(); !note.empty()) {
    std::cerr << "ncclscope fr-export: " << note << "\n";
  }

  exporters::fr::FrExportOptions options;
  options.version = o.version;
  options.buffer_size = o.buffer_size;
  const exporters::fr::FrJobDumps dumps = exporters::fr::DumpsOfJob(files, options);
  for (const std::string& n : dumps.notes) std::cerr << "ncclscope fr-export: " << n << "\n";
  if (dumps.ranks.empty()) return FailFrExport(o.dir + ": no ring file names its global rank");

  const auto format =
      o.format == "json" ? exporters::fr::FrFormat::kJson : exporters::fr::FrFormat::kPickle;
  std::vector<std::string> written;
  if (!exporters::fr::WriteFrDumps(dumps.ranks, o.out, o.prefix, format, &written, &error)) {
    return FailFrExport(error);
  }
  size_t entries = 0;
  for (const auto& d : dumps.ranks) entries += d.dump.entries.size();
  std::cout << "wrote " << written.size() << " Flight Recorder dump(s) (version " << o.version
            << ", " << o.format << ", " << entries << " entries) to " << o.out << "/" << o.prefix
            << "<rank>\n";
  return 0;
}

}  // namespace

void RegisterFrExportCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FrExportArgs>();
  auto* cmd = app.add_subcommand(
      "fr-export",
      "Write one PyTorch Flight Recorder dump per rank (torch's file names and format), for "
      "torchfrtrace and other FR readers");
  cmd->add_option("dir", o->dir, "Trace directory of the job")->required();
  cmd->add_option("-o,--out", o->out, "Directory for the dumps (created 0700)")->required();
  cmd->add_option("--version", o->version, "Dump version to write: 2.2 ... 2.10 (default 2.10)");
  cmd->add_option("--format", o->format, "pickle (torch's default dump) or json")
      ->check(CLI::IsMember({"pickle", "json"}));
  cmd->add_option("--buffer-size", o->buffer_size,
                  "Keep only the newest N entries per rank, as TORCH_NCCL_TRACE_BUFFER_SIZE "
                  "(default 2000)");
  cmd->add_option("--prefix", o->prefix, "File name prefix (default nccl_trace_rank_)");
  cmd->add_option("--job", o->job,
                  "The job to read when the directory holds several (default: the newest "
                  "heartbeat's)");
  cmd->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace ncclscope::tools
