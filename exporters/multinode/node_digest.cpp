#include "exporters/multinode/node_digest.h"

#include <random>
#include <utility>

#include "exporters/multinode/digest_codec.h"
#include "trace/clock.h"
#include "trace/ring_layout.h"

namespace ncclscope::exporters {
namespace {

// Ring headers hold the host name truncated to their field (liveness.cpp compares the same way).
bool SameHost(const std::string& file_host, const std::string& this_host) {
  return !this_host.empty() && file_host == this_host.substr(0, trace::kHostBytes - 1);
}

}  // namespace

uint64_t DrawInstanceId() {
  std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{device()} << 32) ^ device();
  return id;
}

std::string BuildNodeDigest(RingSource* source, const hang_detector::ProcessProbe& probe,
                            int64_t now_wall_ns, const hang_detector::DigestLimits& limits,
                            NodeDigestStats* stats, uint64_t instance) {
  const auto t0 = std::chrono::steady_clock::now();
  NodeDigestStats local;
  NodeDigestStats& st = stats != nullptr ? *stats : local;
  st = {};
  DigestHeader header;
  header.host = probe.ThisHost();
  header.built_at_ns = now_wall_ns;
  header.produced_at_ns = now_wall_ns;
  header.instance = instance;
  std::string error;
  const std::vector<std::string> names = source->List(&error);
  if (!error.empty()) header.unreadable.push_back(error);
  // Cut one file at a time: only the cuts of the node are held, never two full rings.
  std::vector<hang_detector::DigestCut> cuts;
  std::vector<DigestRank> ranks;
  cuts.reserve(names.size());
  for (const std::string& name : names) {
    hang_detector::RankFile full;
    hang_detector::RankFileBuilder builder(&full);
    std::string why;
    if (!source->Visit(name, 0, &builder, &why)) {
      header.unreadable.push_back(why);
      continue;
    }
    st.records += full.size();
    cuts.push_back(hang_detector::CutForDigest(full, limits));
    if (header.job_id.empty()) header.job_id = full.snap->job_id;
  }
  for (const hang_detector::DigestCut& cut : cuts) {
    const trace::RingInfo& s = *cut.file.snap;
    DigestRank r;
    r.file = &cut.file;
    r.omitted = cut.omitted;
    if (SameHost(s.host, header.host)) r.process = probe.State(s.pid);
    ranks.push_back(r);
    st.kept += cut.file.size();
  }
  std::string bytes = EncodeNodeDigest(header, ranks);
  st.ranks = ranks.size();
  st.bytes = bytes.size();
  st.unreadable = std::move(header.unreadable);
  st.build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return bytes;
}

DigestCache::DigestCache(RingSource* source, const hang_detector::ProcessProbe* probe,
                         hang_detector::DigestLimits limits, uint64_t instance,
                         std::chrono::milliseconds max_age)
    : source_(source), probe_(probe), limits_(limits), instance_(instance), max_age_(max_age) {}

std::string DigestCache::Get() {
  std::string bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (!have_ || now - built_ >= max_age_) {
      bytes_ = BuildNodeDigest(source_, *probe_, trace::RealtimeNs(), limits_, nullptr, instance_);
      built_ = now;
      have_ = true;
    }
    bytes = bytes_;
  }
  StampProducedAt(&bytes, trace::RealtimeNs());
  return bytes;
}

}  // namespace ncclscope::exporters
