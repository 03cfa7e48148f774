#include "exporters/sources/fr_evidence.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ncclscope::exporters {

namespace {

using Names = std::optional<FrRingSource::EntryNames>;

bool IsSendOrRecv(const std::string& op) {
  return op == "send" || op == "recv";
}

}  // namespace

void NameFrEntries(const FrRingSource& source, hang_detector::Analysis* analysis) {
  // Every cited record, by rank, so each dump is decoded once.
  std::map<int, std::vector<uint64_t>> cited;
  for (const hang_detector::Verdict& v : analysis->verdicts) {
    for (const hang_detector::Evidence& e : v.evidence) {
      if (e.has_record && e.rank >= 0) cited[e.rank].push_back(e.record_index);
    }
  }
  std::map<std::pair<int, uint64_t>, FrRingSource::EntryNames> named;
  for (const auto& [rank, indices] : cited) {
    std::vector<Names> names;
    std::string error;
    if (!source.NamesOf(rank, indices, &names, &error)) {
      analysis->input.notes.push_back("the records of rank " + std::to_string(rank) +
                                      " are not named by record_id: " + error);
      continue;
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      if (names[i]) named[{rank, indices[i]}] = *names[i];
    }
  }
  for (hang_detector::Verdict& v : analysis->verdicts) {
    for (hang_detector::Evidence& e : v.evidence) {
      if (!e.has_record) continue;
      const auto it = named.find({e.rank, e.record_index});
      if (it == named.end()) continue;
      e.fr_record_id = it->second.record_id;
      // The verdict's send or receive is its first evidence (the detectors cite the operation
      // at issue first); torch numbers it on that rank.
      if (IsSendOrRecv(v.op) && v.fr_p2p_seq_id == 0 && it->second.is_p2p &&
          it->second.p2p_seq_id > 0) {
        v.fr_p2p_seq_id = it->second.p2p_seq_id;
        v.fr_p2p_rank = e.rank;
      }
    }
  }
}

}  // namespace ncclscope::exporters
