// A node digest as the tests' node serves it: the given cuts of rank files written on kHost
// (tests/hang_detector/job_builder.h), for job "job-1".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exporters/multinode/digest_codec.h"
#include "hang_detector/ingest/rank_digest.h"
#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {

// The digest's bytes, built and produced at `produced` (ns, wall clock), every rank's process in
// state `process`. `files` must outlive the call only.
inline std::string EncodeDigest(
    const std::vector<hang_detector::RankFile>& files, int64_t produced,
    hang_detector::ProcessState process = hang_detector::ProcessState::kRunning) {
  std::vector<exporters::DigestRank> ranks;
  for (const hang_detector::RankFile& f : files) ranks.push_back({&f, process, 0});
  exporters::DigestHeader h;
  h.host = kHost;
  h.job_id = "job-1";
  h.built_at_ns = produced;
  h.produced_at_ns = produced;
  return exporters::EncodeNodeDigest(h, ranks);
}

}  // namespace ncclscope::testing
