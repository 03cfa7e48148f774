// Two sources of one job view that claim the same host name or the same ranks (docs/digest.md,
// "Two sources claiming one host or one rank"). Exporters started without their node's name
// (simulated nodes, pods named alike) all call themselves one host; two runs under one job id, or
// an earlier run's ring files left in a node's directory, put one rank in two sources. Unnoticed,
// the first makes each exporter take the others' digests for its own and correlate alone; the
// second counts a rank twice. Each problem is one line naming the fix; a rank is kept from one
// source only. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::exporters {

// One source of a job view: this node's own ring files, or one digest (an exporter's, a file).
struct SourceFacts {
  std::string label;       // how lines name it: the digest's URL or path, "ring files of DIR"
  std::string host;        // the host name it gives (a digest's header; this node's own)
  uint64_t instance = 0;   // its producer's id (digest.proto `instance`); 0 unknown
  bool local = false;      // this process's own node
  std::vector<int> ranks;  // the global ranks it holds, sorted and distinct
  // Local only: the host names its ring files carry, distinct (the value NCCLSCOPE_HOST needs).
  std::vector<std::string> file_hosts;
};

struct SourceProblem {
  std::string key;   // the same problem found again has the same key: say it once
  std::string line;  // what clashes, what was done about it, and the fix
};

// Producers other than the local source's (another instance id) that give its host name: one
// problem each ("host name clash: <label> is another exporter calling itself ..."). Instance 0
// never clashes: a producer without an id is told apart by nothing. Names other sources share
// with each other are left alone: no view here depends on them (a digest's ranks are matched by
// their writers, its processes were checked on its node), and those exporters say it themselves.
std::vector<SourceProblem> FindHostClashes(const std::vector<SourceFacts>& sources);

// One writer process's rank, its copies from every source that holds it merged into one.
struct WriterClaim {
  int rank = -1;
  int64_t heartbeat_wall_ns = 0;  // its newest heartbeat, on this host's clock
  std::vector<uint32_t> sources;  // indices into the SourceFacts, sorted and distinct
};

// How far one source's newest heartbeat of a rank may trail another source's and still count as
// current: a dead process of an earlier run loses to the live one that holds its rank now, while
// two live ones (heartbeats 0.1 s apart, digests up to a second old) keep one fixed order.
inline constexpr double kCurrentCopyS = 10;

struct RankClashes {
  std::vector<char> keep;  // per writer: 1 kept, 0 left out
  std::vector<SourceProblem> problems;
};

// Ranks that two sources hold from different processes, neither source holding the other's (one
// source holding both is a process restarted on that node: both kept, as in one directory). Such a
// rank is kept from one source: among those whose copy is current, this node's own ring files,
// else the first by host name, then label. One problem per pair of sources, naming their ranks.
RankClashes ResolveRankClashes(const std::vector<SourceFacts>& sources,
                               const std::vector<WriterClaim>& writers);

}  // namespace ncclscope::exporters
