// `ncclscope dump DIR... [--rank R] [--json]`: every record of every rank, with each file's header;
// several directories (each node's of one job) in one rank order.
#include <iostream>
#include <memory>
#include <span>

#include "tools/commands.h"
#include "tools/record_printer.h"
#include "tools/trace_dirs.h"
#include "trace/trace_set.h"

namespace ncclscope::tools {
namespace {

struct DumpOptions {
  std::vector<std::string> dirs;
  int rank = -1;
  bool json = false;
  size_t tail = 0;  // 0 = every record
};

void PrintFile(const trace::RingSnapshot& file, const DumpOptions& o) {
  const CommNames names = CommNamesOf(file);
  const trace::NvtxNames nvtx = NvtxNamesOf(file);
  const bool json = o.json;
  const size_t first =
      o.tail > 0 && file.records.size() > o.tail ? file.records.size() - o.tail : 0;
  const auto records = std::span(file.records).subspan(first);
  if (json) {
    std::cout << HeaderJson(file).dump() << "\n";
    for (const auto& c : file.comms) std::cout << CommJson(file, c).dump() << "\n";
    for (const auto& r : records) {
      nlohmann::json j = RecordJson(file, names, r);
      AppendNvtxJson(nvtx, r, &j);
      std::cout << j.dump() << "\n";
    }
    return;
  }
  std::cout << HeaderText(file) << "\n";
  for (const auto& c : file.comms) std::cout << CommText(c) << "\n";
  for (const auto& r : records) {
    std::string line = RecordText(file, names, r);
    AppendNvtxText(nvtx, r, &line);
    std::cout << line << "\n";
  }
}

int Dump(const DumpOptions& o) {
  trace::TraceSet set;
  std::string error;
  if (!EachDirOnce(o.dirs, &error)) {
    std::cerr << "ncclscope dump: " << error << "\n";
    return 3;
  }
  // Each directory's files are added to the set, which keeps all of them in rank order.
  for (const std::string& dir : o.dirs) {
    if (!trace::ReadTraceDir(dir, &set, &error)) {
      std::cerr << "ncclscope dump: " << error << "\n";
      return 3;
    }
  }
  for (const std::string& e : set.errors) std::cerr << "ncclscope dump: skipped " << e << "\n";
  if (set.files.empty()) {
    std::cerr << "ncclscope dump: " << NameDirs(o.dirs) << ": no readable ring files\n";
    return 3;
  }
  bool printed = false;
  for (const auto& file : set.files) {
    if (o.rank >= 0 && file.global_rank != o.rank) continue;
    PrintFile(file, o);
    printed = true;
  }
  if (!printed) {
    std::cerr << "ncclscope dump: " << NameDirs(o.dirs) << ": no file of rank " << o.rank << "\n";
    return 3;
  }
  std::cout.flush();
  return set.errors.empty() ? 0 : 3;
}

}  // namespace

void RegisterDumpCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "dump", "Print every record of every rank in a trace directory (or several: each node's)");
  auto options = std::make_shared<DumpOptions>();
  cmd->add_option("dir", options->dirs,
                  "Trace directory; or several, each node's of one job, in one rank order")
      ->required();
  cmd->add_option("--rank", options->rank, "Only this global rank");
  cmd->add_option("--tail", options->tail, "Only the last N records of each rank");
  cmd->add_flag("--json", options->json, "JSON lines: header, comm and record objects");
  cmd->callback([=] { *exit_code = Dump(*options); });
}

}  // namespace ncclscope::tools
