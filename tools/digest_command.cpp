// `ncclscope digest DIR [-o FILE] [--every S] [--this-host-only] [--job J]`: this node's digest of
// the ring files of DIR (docs/digest.md), written atomically to FILE, for jobs whose nodes share a
// file system: `ncclscope analyze --from` reads such files (or a directory of them) like an
// exporter's /digest. With --every, rewritten every S seconds until SIGINT/SIGTERM. Exit code 3
// when DIR cannot be listed or FILE cannot be written.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <memory>

#include "exporters/multinode/digest_codec.h"
#include "exporters/multinode/digest_fetch.h"
#include "exporters/multinode/digest_file.h"
#include "exporters/multinode/node_digest.h"
#include "exporters/sources/ring_source.h"
#include "tools/commands.h"
#include "trace/clock.h"
#include "trace/ring_reader.h"

namespace ncclscope::tools {
namespace {

struct DigestCliOptions {
  std::string dir;
  std::string out;
  double every_s = 0;
  bool this_host_only = false;
  std::string job;
};

// Another producer's digest where this one wrote its own: two nodes write one file (alike host
// names make `-o /shared/job/$(hostname).digest` one name), each hiding the other's ranks from
// `analyze --from`. Said once.
void SayIfReplaced(const DigestCliOptions& o, uint64_t instance, bool* said) {
  if (*said) return;
  const std::vector<exporters::FetchedDigest> read =
      exporters::FetchDigests({{exporters::DigestSource::Kind::kFile, o.out}}, {});
  exporters::DecodedDigest other;
  std::string why;
  if (!read[0].ok ||
      !exporters::DecodeNodeDigest(read[0].bytes, o.out, read[0].received_at_ns, &other, &why) ||
      other.header.instance == 0 || other.header.instance == instance) {
    return;
  }
  std::cerr << "ncclscope digest: warning: " << o.out << " was replaced by another producer (host "
            << other.header.host << ", " << other.files.size()
            << " rank(s)) since this one wrote it: two nodes write one file, each hiding the "
               "other's ranks; give each node its own file (NCCLSCOPE_HOST set per node, -o "
               "DIR/$NCCLSCOPE_HOST.digest)\n";
  *said = true;
}

// One digest written (or printed); false after saying why on stderr.
bool WriteOnce(const DigestCliOptions& o, exporters::RingSource* source,
               const hang_detector::ProcessProbe& probe, uint64_t instance) {
  exporters::NodeDigestStats stats;
  std::string bytes =
      exporters::BuildNodeDigest(source, probe, trace::RealtimeNs(), {}, &stats, instance);
  for (const std::string& line : stats.unreadable) {
    std::cerr << "ncclscope digest: " << line << "\n";
  }
  if (o.out.empty()) {
    std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::cout.flush();
    return true;
  }
  exporters::StampProducedAt(&bytes, trace::RealtimeNs());
  std::string error;
  if (!exporters::WriteFileAtomically(o.out, bytes, &error)) {
    std::cerr << "ncclscope digest: " << error << "\n";
    return false;
  }
  if (o.every_s <= 0) {
    std::cerr << "ncclscope digest: " << stats.ranks << " rank(s), " << stats.kept << " of "
              << stats.records << " records, " << stats.bytes << " bytes -> " << o.out << "\n";
  }
  return true;
}

int Run(const DigestCliOptions& o) {
  if (o.out.empty() && isatty(STDOUT_FILENO) != 0) {
    std::cerr << "ncclscope digest: the digest is binary (protobuf): give -o FILE, or redirect "
                 "stdout\n";
    return 3;
  }
  if (o.out.empty() && o.every_s > 0) {
    std::cerr << "ncclscope digest: --every needs -o FILE (each digest replaces the last)\n";
    return 3;
  }
  std::string error;
  trace::ListRingFiles(o.dir, &error);
  if (!error.empty()) {
    std::cerr << "ncclscope digest: " << error << "\n";
    return 3;
  }
  const auto probe = hang_detector::MakeLinuxProcessProbe();
  exporters::DirRingSource source(o.dir, o.this_host_only ? probe->ThisHost() : "", o.job);
  const uint64_t instance = exporters::DrawInstanceId();
  if (o.every_s <= 0) return WriteOnce(o, &source, *probe, instance) ? 0 : 3;
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const timespec period{
      static_cast<time_t>(o.every_s),
      static_cast<long>((o.every_s - static_cast<double>(static_cast<time_t>(o.every_s))) * 1e9)};
  bool said = false;
  for (bool first = true;; first = false) {
    if (!first) SayIfReplaced(o, instance, &said);
    if (!WriteOnce(o, &source, *probe, instance)) return 3;
    if (sigtimedwait(&stop, nullptr, &period) > 0) return 0;
  }
}

}  // namespace

void RegisterDigestCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "digest",
      "Write this node's digest of a trace directory (for analyze --from over a shared file "
      "system)");
  auto o = std::make_shared<DigestCliOptions>();
  cmd->add_option("dir", o->dir, "Trace directory of this node")->required();
  cmd->add_option("-o,--output", o->out,
                  "File to replace atomically (name it *.digest: analyze --from DIR reads those); "
                  "stdout when not given");
  cmd->add_option("--every", o->every_s,
                  "Rewrite the digest every this many seconds until SIGINT/SIGTERM")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--this-host-only", o->this_host_only,
                "Only the ring files written on this host (nodes sharing one trace directory)");
  cmd->add_option("--job", o->job,
                  "Only this job's ring files; default: the job of the newest heartbeat (as the "
                  "exporter)");
  cmd->callback([=] { *exit_code = Run(*o); });
}

}  // namespace ncclscope::tools
