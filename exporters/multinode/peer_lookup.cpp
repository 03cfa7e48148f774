// The lookups of peer_sources.h that touch the network: a DNS name's addresses and Prometheus'
// targets.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "exporters/multinode/digest_fetch.h"
#include "exporters/multinode/peer_sources.h"

namespace ncclscope::exporters {
namespace {

// An address as getaddrinfo gives it (IPv6 already in brackets) and the port: a peer.
void AddPeer(const std::string& host, int port, std::vector<PeerUrl>* out) {
  PeerUrl p;
  if (ParseHostPort(host + ":" + std::to_string(port), port, &p)) out->push_back(p);
}

void Resolve(const PeerPlan::Dns& d, std::vector<PeerUrl>* out, std::vector<std::string>* errors) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(d.name.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    errors->push_back("dns:" + d.name + ": " + gai_strerror(rc));
    return;
  }
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      AddPeer(text, d.port, out);
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      AddPeer(std::string("[") + text + "]", d.port, out);
    }
  }
  freeaddrinfo(found);
}

}  // namespace

bool ParsePrometheusTargets(const std::string& body, const std::string& job,
                            std::vector<PeerUrl>* out, std::string* error) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "not JSON";
    return false;
  }
  const auto status = j.find("status");
  if (status == j.end() || *status != "success") {
    *error = "status is not \"success\"";
    return false;
  }
  const auto data = j.find("data");
  if (data == j.end() || !data->is_object() || !data->contains("activeTargets") ||
      !(*data)["activeTargets"].is_array()) {
    *error = "no data.activeTargets array";
    return false;
  }
  for (const nlohmann::json& t : (*data)["activeTargets"]) {
    if (!t.is_object()) continue;
    const auto labels = t.find("labels");
    const auto url = t.find("scrapeUrl");
    if (labels == t.end() || !labels->is_object() || url == t.end() || !url->is_string()) continue;
    const auto target_job = labels->find("job");
    if (target_job == labels->end() || *target_job != job) continue;
    const std::string u = url->get<std::string>();
    PeerUrl p;
    const size_t scheme = u.find("://");
    if (scheme == std::string::npos ||
        (u.compare(0, scheme, "http") != 0 && u.compare(0, scheme, "https") != 0)) {
      continue;
    }
    const size_t after = scheme + 3;
    if (ParseHostPort(u.substr(after, u.find('/', after) - after), 80, &p)) out->push_back(p);
  }
  return true;
}

std::vector<PeerUrl> ResolvePeers(const PeerPlan& plan, double timeout_s,
                                  std::vector<std::string>* errors) {
  std::vector<PeerUrl> all = plan.fixed;
  for (const PeerPlan::Dns& d : plan.dns) Resolve(d, &all, errors);
  if (!plan.prometheus.empty()) {
    std::vector<DigestSource> sources;
    for (const PeerPlan::Prometheus& p : plan.prometheus) {
      sources.push_back({DigestSource::Kind::kUrl, p.api + "/api/v1/targets?state=active"});
    }
    FetchOptions options;
    options.timeout_s = timeout_s;
    options.max_bytes = size_t{16} << 20;
    const std::vector<FetchedDigest> answers = FetchDigests(sources, options);
    for (size_t i = 0; i < answers.size(); ++i) {
      std::string why;
      if (!answers[i].ok) {
        errors->push_back("prometheus:" + plan.prometheus[i].api + ": " + answers[i].error);
      } else if (!ParsePrometheusTargets(answers[i].bytes, plan.prometheus[i].job, &all, &why)) {
        errors->push_back("prometheus:" + plan.prometheus[i].api + ": targets answer: " + why);
      }
    }
  }
  std::set<std::string> seen;
  std::vector<PeerUrl> unique;
  for (PeerUrl& p : all) {
    if (seen.insert(p.base).second) unique.push_back(std::move(p));
  }
  return unique;
}

}  // namespace ncclscope::exporters
