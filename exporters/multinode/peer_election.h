// Which exporter of a job correlates it (exporters/README.md, "One job across many nodes"): no
// consensus protocol, one order every node computes alike. Nodes are ordered by the lowest global
// rank each holds (a node's digest lists its ranks), ties by host name, then by instance id (two
// exporters sharing a host name); the first reachable node in that order correlates, normally the
// node of rank 0. Pure; thread-safe. The watchdogs of one node choose their decider by a lock
// instead (plugin/watchdog/node_lock.h): why two mechanisms, and what each guarantees, is
// docs/design.md, "Why two elections".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::exporters {

// A node's place in the order: its lowest global rank (-1: none known, it holds no rank yet or
// was never reached), its host name and its exporter's instance id (digest.proto; 0 unknown).
struct NodeKey {
  int lowest_rank = -1;
  std::string host;
  uint64_t instance = 0;
};

// True when `a` comes before `b`: a node holding a rank comes before one holding none; lower
// lowest rank first; equal ranks (nodes sharing a directory without --this-host-only) by host;
// equal hosts too (exporters started without their node's name) by instance, so two such
// exporters never both see themselves first.
bool Before(const NodeKey& a, const NodeKey& b);

// What this node knows of one peer.
struct PeerView {
  NodeKey key;             // from its last digest; lowest_rank -1 until one told it
  bool reachable = false;  // answered at the last look
  // Its digest is this node's own (a node list names every node): it carries this exporter's
  // instance id, or, from a producer without one, this exporter's host name.
  bool self = false;
};

// True when this node correlates: it holds a rank, and every peer before it is unreachable.
bool ShouldCorrelate(const NodeKey& self, const std::vector<PeerView>& peers);

// Whether a node that does not correlate must look at a peer this cycle, and how: its digest
// while its place is unknown, a health check while it is before this node, nothing after.
enum class Look { kNone, kHealth, kDigest };
Look LookAt(const NodeKey& self, const PeerView& peer);

}  // namespace ncclscope::exporters
