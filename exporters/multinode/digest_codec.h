// The node digest on the wire (exporters/multinode/digest.proto, docs/digest.md): the RankFiles of
// one node's ranks encoded, and decoded back into RankFiles of another host whose times are shifted
// onto that host's clock. Pure functions over their arguments: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hang_detector/ingest/process_probe.h"
#include "hang_detector/ingest/rank_file.h"

namespace ncclscope::exporters {

inline constexpr uint32_t kDigestFormatVersion = 1;

// What a reader accepts. A digest beyond them is refused (a corrupt or hostile producer must not
// make the correlator allocate without bound); real ones are far inside.
struct DigestBounds {
  size_t max_bytes = size_t{64} << 20;
  size_t max_ranks = 1u << 20;             // trace::kMaxWorldSize
  size_t max_comms_per_rank = 1u << 16;    // the ring's comm table is far smaller
  size_t max_records_per_rank = 1u << 20;  // a digest keeps the frontier, not the ring
  size_t max_records = 1u << 24;           // all ranks of one digest
  size_t max_shapes_per_rank = 1u << 20;
  uint64_t max_index_span = uint64_t{1} << 26;  // the largest ring (NCCLSCOPE_RING_RECORDS)
  // Entries the index's lanes would hold for one digest (sequence number spans of every
  // communicator and send/recv pair): what the records make the correlator allocate.
  uint64_t max_lane_entries = uint64_t{1} << 27;
  // A rank's longest pause (RankFile::pause_before_ns): it sets how long stage two waits before
  // it confirms a hang (clamped to AnalyzeOptions::confirm_ceiling_s, but a year is no pause).
  int64_t max_pause_ns = int64_t{366} * 24 * 3600 * 1000000000;
  size_t max_string = 4096;
  size_t max_unreadable = 1024;
};

// One rank as a node publishes it: its cut (hang_detector::CutForDigest) and its process as this
// node's probe sees it.
struct DigestRank {
  const hang_detector::RankFile* file = nullptr;
  hang_detector::ProcessState process = hang_detector::ProcessState::kUnknown;
  uint64_t omitted = 0;
};

struct DigestHeader {
  std::string job_id;
  std::string host;
  int64_t built_at_ns = 0;              // when the ring files were read (wall clock)
  int64_t produced_at_ns = 0;           // when the bytes leave (StampProducedAt replaces it)
  std::vector<std::string> unreadable;  // this node's ring files that could not be read
  uint64_t instance = 0;                // the producing exporter's id (DrawInstanceId); 0 none
};

// The serialized NodeDigest. Every RankFile must have been built by RankFileBuilder or a cut.
std::string EncodeNodeDigest(const DigestHeader& header, const std::vector<DigestRank>& ranks);

// Sets produced_at_ns of encoded bytes without decoding them: a field appended to a message
// replaces an earlier value of that field when parsed (protobuf's merge rule for scalars), so a
// cached encoding is stamped per response in O(1).
void StampProducedAt(std::string* bytes, int64_t produced_at_ns);

struct DecodedDigest {
  DigestHeader header;
  std::vector<hang_detector::RankFile> files;  // each with `remote` set
  uint64_t omitted = 0;                        // records all ranks' producers left out
};

// Decodes a digest that arrived at received_at_ns (this host's wall clock) from `source` (a URL, a
// path). Every time is shifted by received_at_ns - produced_at_ns: the producer's clock is never
// compared with ours, and the error is the transport's delay (a fetch's round trip). Returns false
// and sets *error ("<source>: <what is wrong>") for bytes that are not a digest this build reads;
// never crashes, and allocates within `bounds`.
bool DecodeNodeDigest(std::string_view bytes, const std::string& source, int64_t received_at_ns,
                      DecodedDigest* out, std::string* error, const DigestBounds& bounds = {});

}  // namespace ncclscope::exporters
