// Where `ncclscope analyze --from` gets node digests (docs/digest.md): exporters over HTTP(S),
// digest files (the shared-filesystem transport), directories of them, and hostfiles naming
// exporters. Fetches run in parallel with libcurl. Functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::exporters {

// The exporter's default port (exporter.h, kDefaultListen): a hostfile line without one gets it.
inline constexpr int kExporterDefaultPort = 9478;

struct DigestSource {
  enum class Kind { kUrl, kFile };
  Kind kind = Kind::kUrl;
  std::string where;  // the URL (ending in /digest) or the file path
};

// Expands --from values: "http(s)://host[:port][/digest]" (the path /digest added when there is
// none), a digest file, a directory (its *.digest files), or a hostfile (a text file of
// host[:port] lines, '#' comments, IPv6 addresses in brackets). Returns false with *error naming
// the value (and the line) that is neither.
bool ExpandSources(const std::vector<std::string>& from, std::vector<DigestSource>* out,
                   std::string* error);

struct FetchOptions {
  double timeout_s = 2;                 // connecting, and the whole transfer
  size_t max_bytes = size_t{64} << 20;  // a larger answer is refused (DigestBounds::max_bytes)
  int parallel = 64;                    // transfers at once
};

struct FetchedDigest {
  std::string source;  // the URL or path, for messages
  bool ok = false;
  std::string bytes;
  std::string error;  // "<source>: <why>" when not ok
  // This host's wall clock when the bytes were complete (a file: its modification time), and the
  // transfer's duration: the bound on the clock shift's error (docs/digest.md).
  int64_t received_at_ns = 0;
  double round_trip_s = 0;
};

// Fetches every source, in parallel; one entry per source, in order. Never throws for a source
// that fails: its entry says why.
std::vector<FetchedDigest> FetchDigests(const std::vector<DigestSource>& sources,
                                        const FetchOptions& options);

}  // namespace ncclscope::exporters
