// Modeled transfer time, so timing scenarios are meaningful on a CPU: an operation takes at least
// (latency + bytes / bandwidth) * slowdown, and each chunk a rank publishes becomes visible to its
// peers only when the model says it has arrived. A slowed rank therefore delays every peer.
#pragma once

#include <cstdint>

namespace ncclsim {

// Reads NCCLSIM_LATENCY_US (default 20), NCCLSIM_BANDWIDTH_GBPS (default 10) and
// NCCLSIM_LINK_SLOWDOWN (default 1.0) the first time; later calls do nothing. Thread-safe.
void initLinkModel();

// Snapshot of the model for one operation.
struct LinkTiming {
  double latency_ns = 0;
  double ns_per_byte = 0;
  double slowdown = 1;

  // Modeled time at which `fraction` of `bytes` has arrived, for an op started at start_ns.
  uint64_t arrival(uint64_t start_ns, double bytes, double fraction) const {
    return start_ns + uint64_t((latency_ns + bytes * ns_per_byte * fraction) * slowdown);
  }
};

// Current model, including the latest ncclsimSetLinkSlowdown factor. Thread-safe.
LinkTiming currentLinkTiming();

// True while this process's links are hung (ncclsimSetLinkHung): what it publishes never arrives.
// Read per chunk, so a link can die in the middle of an operation. Thread-safe.
bool linkHung();

}  // namespace ncclsim
