// This node's digest (docs/digest.md): every ring file of a source read with the compact reader,
// cut to its frontier (hang_detector/ingest/rank_digest.h), each writer's process checked by this
// host's probe, encoded (exporters/multinode/digest_codec.h). Served on GET /digest by the
// exporter, written to a file by `ncclscope digest`.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"
#include "hang_detector/ingest/process_probe.h"
#include "hang_detector/ingest/rank_digest.h"

namespace ncclscope::exporters {

struct NodeDigestStats {
  size_t ranks = 0;
  uint64_t records = 0;  // records of the ring files read
  uint64_t kept = 0;     // of them, in the digest
  size_t bytes = 0;
  double build_s = 0;
  std::vector<std::string> unreadable;
};

// A random non-zero id for one producer process (an exporter), drawn once at its start and carried
// in every digest it serves: two exporters that share a host name still differ by it, and an
// exporter recognises its own digest by it. Thread-safe.
uint64_t DrawInstanceId();

// Reads every file `source` lists (from its oldest record) and encodes the node's digest as of
// now_wall_ns, stamped produced at now_wall_ns, carrying `instance` (0: none). A file's process is
// checked only when the file's host is this host (the probe's); otherwise it is unknown. A file
// that cannot be read is listed in the digest and in stats. Thread-safety is the source's and the
// probe's (both of ours are).
std::string BuildNodeDigest(RingSource* source, const hang_detector::ProcessProbe& probe,
                            int64_t now_wall_ns, const hang_detector::DigestLimits& limits,
                            NodeDigestStats* stats = nullptr, uint64_t instance = 0);

// The exporter's /digest: built at most once per `max_age`, so any number of correlators polling
// cost one read of the rings per period; every answer is stamped with the time it is handed out.
// Thread-safe (one build at a time; concurrent callers wait for it).
class DigestCache {
 public:
  // `instance`: this exporter's DrawInstanceId, carried in every answer.
  DigestCache(RingSource* source, const hang_detector::ProcessProbe* probe,
              hang_detector::DigestLimits limits, uint64_t instance,
              std::chrono::milliseconds max_age = std::chrono::seconds(1));
  std::string Get();

 private:
  RingSource* source_;
  const hang_detector::ProcessProbe* probe_;
  hang_detector::DigestLimits limits_;
  uint64_t instance_;
  std::chrono::milliseconds max_age_;
  std::mutex mutex_;
  std::string bytes_;
  std::chrono::steady_clock::time_point built_{};
  bool have_ = false;
};

}  // namespace ncclscope::exporters
