// What an exporter reads to find its peers (exporters/multinode/peer_sources.h): Slurm host lists
// from the environment, Prometheus' targets answer from the network, host[:port] lines of hostfiles
// and the --peers-from values. The first byte picks the reader, the rest is its input: never a
// crash, never more hosts than the bound, every host accepted a well-formed peer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "exporters/multinode/peer_sources.h"
#include "exporters/multinode/slurm_hostlist.h"

namespace {

using ncclscope::exporters::PeerUrl;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckPeer(const PeerUrl& p) {
  Check(p.base.rfind("http://", 0) == 0);
  Check(p.base == "http://" + p.label);
  Check(p.label.find(':') != std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  switch (data[0] % 4) {
    case 0: {
      std::vector<std::string> hosts;
      if (ncclscope::exporters::ExpandHostlist(input, &hosts, &error)) {
        Check(hosts.size() <= ncclscope::exporters::kMaxHostlistHosts);
        for (const std::string& h : hosts) Check(!h.empty());
      } else {
        Check(hosts.empty() && !error.empty());
      }
      break;
    }
    case 1: {
      std::vector<PeerUrl> peers;
      if (ncclscope::exporters::ParsePrometheusTargets(input, "ncclscope", &peers, &error)) {
        for (const PeerUrl& p : peers) CheckPeer(p);
      }
      break;
    }
    case 2: {
      PeerUrl p;
      if (ncclscope::exporters::ParseHostPort(input, 9478, &p)) CheckPeer(p);
      break;
    }
    default: {
      // The Slurm variable is the input; dns: and prometheus: values are parsed, not resolved.
      ncclscope::exporters::PeerPlan plan;
      const auto env = [&input](const char* name) -> const char* {
        return std::string(name) == "SLURM_JOB_NODELIST" ? input.c_str() : nullptr;
      };
      const std::vector<std::string> from = {"slurm"};
      if (ncclscope::exporters::ParsePeerOptions({}, from, 9478, env, &plan, &error)) {
        for (const PeerUrl& p : plan.fixed) CheckPeer(p);
      }
      ncclscope::exporters::ParsePeerOptions({}, {"dns:" + input}, 9478, env, &plan, &error);
      ncclscope::exporters::ParsePeerOptions({}, {"prometheus:" + input}, 9478, env, &plan, &error);
      break;
    }
  }
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  seeds->push_back(std::string(1, '\0') + "gpu[001-004,010],login1,r[1-2]n[08-10]");
  seeds->push_back(std::string(1, '\1') +
                   R"({"status":"success","data":{"activeTargets":[{"labels":{"job":"ncclscope"},)"
                   R"("scrapeUrl":"http://gpu01:9478/metrics"},{"labels":{"job":"node"},)"
                   R"("scrapeUrl":"http://[fe80::1]:9100/metrics"}]}})");
  seeds->push_back(std::string(1, '\2') + "[fe80::1]:9478");
  seeds->push_back(std::string(1, '\2') + "node-7.example.org:9500");
  seeds->push_back(std::string(1, '\3') + "node[1-3]");
  seeds->push_back(std::string(1, '\3') + "http://prom:9090:ncclscope");
}
