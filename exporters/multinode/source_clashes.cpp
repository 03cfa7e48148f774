#include "exporters/multinode/source_clashes.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace ncclscope::exporters {
namespace {

// "rank 5", "ranks 0-3", "ranks 0,2,4", "no rank".
std::string Ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.empty()) return "no rank";
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i + 1;
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    if (i > 0) out += ",";
    if (end - i >= 3) {
      out += std::to_string(ranks[i]) + "-" + std::to_string(ranks[end - 1]);
      i = end;
    } else {
      out += std::to_string(ranks[i]);
      ++i;
    }
  }
  return out;
}

// What NCCLSCOPE_HOST should be for this node: the one name its ring files carry when that is not
// the exporter's own (simulated nodes; an exporter outside the job's container), else its node's.
std::string HostFix(const SourceFacts& local) {
  if (local.file_hosts.size() == 1 && local.file_hosts.front() != local.host) {
    return "start this one with NCCLSCOPE_HOST=" + local.file_hosts.front() +
           ", the host its ring files name";
  }
  return "set NCCLSCOPE_HOST to each node's own name for the job and its exporter (Kubernetes: "
         "spec.nodeName from the downward API)";
}

// "http://node1:9478/digest (host node1)".
std::string Named(const SourceFacts& s) {
  return s.host.empty() ? s.label : s.label + " (host " + s.host + ")";
}

bool Disjoint(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  for (const uint32_t s : a) {
    if (std::binary_search(b.begin(), b.end(), s)) return false;
  }
  return true;
}

}  // namespace

std::vector<SourceProblem> FindHostClashes(const std::vector<SourceFacts>& sources) {
  const auto local =
      std::find_if(sources.begin(), sources.end(), [](const SourceFacts& s) { return s.local; });
  std::vector<SourceProblem> out;
  if (local == sources.end() || local->host.empty() || local->instance == 0) return out;
  std::set<uint64_t> said = {local->instance};  // a producer reached twice is one problem
  for (const SourceFacts& s : sources) {
    if (s.host != local->host || s.instance == 0 || !said.insert(s.instance).second) continue;
    out.push_back({"host " + s.host + " " + s.label,
                   "host name clash: " + s.label + " is another exporter calling itself '" +
                       s.host + "' like this one (it holds " + Ranks(s.ranks) + ", this node " +
                       Ranks(local->ranks) +
                       "); told apart by their instance ids, but each node's exporter needs its "
                       "node's own name: " +
                       HostFix(*local)});
  }
  return out;
}

RankClashes ResolveRankClashes(const std::vector<SourceFacts>& sources,
                               const std::vector<WriterClaim>& writers) {
  RankClashes out;
  out.keep.assign(writers.size(), 1);
  std::map<int, std::vector<size_t>> by_rank;
  for (size_t w = 0; w < writers.size(); ++w) {
    if (writers[w].rank >= 0) by_rank[writers[w].rank].push_back(w);
  }
  const auto window = static_cast<int64_t>(kCurrentCopyS * 1e9);
  const auto prefer = [&sources](uint32_t a, uint32_t b) {
    const SourceFacts& x = sources[a];
    const SourceFacts& y = sources[b];
    if (x.local != y.local) return x.local;
    if (x.host != y.host) return x.host < y.host;
    return x.label < y.label;
  };
  struct Pair {
    std::vector<int> ranks;  // ascending, distinct
    bool stale = false;      // the copy left out was not current
  };
  std::map<std::pair<uint32_t, uint32_t>, Pair> pairs;  // (kept source, source left out)
  for (const auto& [rank, ws] : by_rank) {
    bool clash = false;
    for (size_t a = 0; a < ws.size() && !clash; ++a) {
      for (size_t b = a + 1; b < ws.size() && !clash; ++b) {
        clash = Disjoint(writers[ws[a]].sources, writers[ws[b]].sources);
      }
    }
    if (!clash) continue;
    std::map<uint32_t, int64_t> newest;  // per source holding the rank
    for (const size_t w : ws) {
      for (const uint32_t s : writers[w].sources) {
        const auto [it, inserted] = newest.try_emplace(s, writers[w].heartbeat_wall_ns);
        if (!inserted) it->second = std::max(it->second, writers[w].heartbeat_wall_ns);
      }
    }
    int64_t top = INT64_MIN;
    for (const auto& [s, hb] : newest) top = std::max(top, hb);
    const auto current = [&](uint32_t s) { return newest[s] >= top - window; };
    uint32_t best = newest.begin()->first;
    bool have = false;
    for (const auto& [s, hb] : newest) {
      if (!current(s)) continue;
      if (!have || prefer(s, best)) best = s;
      have = true;
    }
    for (const size_t w : ws) {
      if (std::binary_search(writers[w].sources.begin(), writers[w].sources.end(), best)) {
        continue;
      }
      out.keep[w] = 0;
      for (const uint32_t s : writers[w].sources) {
        Pair& p = pairs[{best, s}];
        if (p.ranks.empty() || p.ranks.back() != rank) p.ranks.push_back(rank);
        p.stale = p.stale || !current(s);
      }
    }
  }
  for (const auto& [which, p] : pairs) {
    const SourceFacts& kept = sources[which.first];
    const SourceFacts& left = sources[which.second];
    const std::string why = p.stale      ? "its copy is the current one"
                            : kept.local ? "the local ring files"
                                         : "the first by host name";
    const std::string key =
        "ranks " + std::min(kept.label, left.label) + " " + std::max(kept.label, left.label);
    out.problems.push_back(
        {key, "rank clash: " + Ranks(p.ranks) + (p.ranks.size() == 1 ? " comes" : " come") +
                  " from other processes in " + Named(left) + " than in " + Named(kept) +
                  ": kept " + kept.label + "'s (" + why +
                  "), left the other out; two runs "
                  "under one job id (give each its own NCCLSCOPE_JOB_ID) or an earlier run's "
                  "ring files still in a node's directory (remove them)"});
  }
  return out;
}

}  // namespace ncclscope::exporters
