#include "exporters/multinode/peer_sources.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "exporters/multinode/slurm_hostlist.h"

namespace ncclscope::exporters {
namespace {

constexpr size_t kMaxHostfileBytes = size_t{16} << 20;

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

bool ValidHost(const std::string& host) {
  if (host.empty() || host.size() > 255) return false;
  if (host.front() == '[') {
    return host.size() > 2 && host.back() == ']' &&
           std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
             return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
           });
  }
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
  });
}

PeerUrl Peer(const std::string& host, int port) {
  const std::string label = host + ":" + std::to_string(port);
  return {"http://" + label, label};
}

bool ParsePort(const std::string& digits, int* port) {
  if (!AllDigits(digits) || digits.size() > 5) return false;
  *port = std::stoi(digits);
  return *port >= 1 && *port <= 65535;
}

std::string Trim(const std::string& s) {
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  const auto b = std::find_if_not(s.begin(), s.end(), blank);
  const auto e = std::find_if_not(s.rbegin(), s.rend(), blank).base();
  return b < e ? std::string(b, e) : std::string();
}

// "http://host[:port][/path]": the host and port (80 without one; the path is dropped, the peer's
// endpoints are ours).
bool UrlPeer(const std::string& url, int default_port, PeerUrl* out) {
  const size_t after = url.find("://") + 3;
  const std::string authority = url.substr(after, url.find('/', after) - after);
  return ParseHostPort(authority, default_port, out);
}

bool ReadHostfile(const std::string& path, int default_port, std::vector<PeerUrl>* out,
                  std::string* error) {
  std::ifstream in(path);
  std::string line;
  int number = 0;
  size_t bytes = 0;
  while (std::getline(in, line)) {
    ++number;
    bytes += line.size() + 1;
    if (bytes > kMaxHostfileBytes) {
      *error = "--peers " + path + ": more than " + std::to_string(kMaxHostfileBytes) + " bytes";
      return false;
    }
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    PeerUrl p;
    if (!ParseHostPort(line, default_port, &p)) {
      *error = "--peers " + path + ":" + std::to_string(number) + ": '" + line +
               "' is not host[:port] (a hostfile names one exporter per line)";
      return false;
    }
    out->push_back(p);
  }
  if (in.bad()) {
    *error = "--peers " + path + ": read error";
    return false;
  }
  return true;
}

bool ParsePeer(const std::string& value, int default_port, PeerPlan* plan, std::string* error) {
  if (StartsWith(value, "http://")) {
    PeerUrl p;
    if (!UrlPeer(value, 80, &p)) {
      *error = "--peers " + value + ": not http://host[:port]";
      return false;
    }
    plan->fixed.push_back(p);
    return true;
  }
  if (value.find("://") != std::string::npos) {
    *error = "--peers " + value + ": only http:// URLs (exporters serve plain HTTP)";
    return false;
  }
  struct stat st {};
  if (stat(value.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      *error = "--peers " + value + ": exists but is not a file (a hostfile names exporters)";
      return false;
    }
    return ReadHostfile(value, default_port, &plan->fixed, error);
  }
  PeerUrl p;
  if (!ParseHostPort(value, default_port, &p)) {
    *error = "--peers " + value + ": neither an http:// URL, an existing hostfile, nor host[:port]";
    return false;
  }
  plan->fixed.push_back(p);
  return true;
}

bool ParseSlurm(int default_port, const EnvLookup& env, PeerPlan* plan, std::string* error) {
  const char* name = "SLURM_JOB_NODELIST";
  const char* list = env(name);
  if (list == nullptr || *list == '\0') {
    name = "SLURM_NODELIST";
    list = env(name);
  }
  if (list == nullptr || *list == '\0') {
    *error =
        "--peers-from slurm: neither SLURM_JOB_NODELIST nor SLURM_NODELIST is set (not inside a "
        "Slurm allocation?)";
    return false;
  }
  std::vector<std::string> hosts;
  std::string why;
  if (!ExpandHostlist(list, &hosts, &why)) {
    *error = std::string("--peers-from slurm: ") + name + "=" + why;
    return false;
  }
  for (const std::string& h : hosts) plan->fixed.push_back(Peer(h, default_port));
  return true;
}

bool ParseFrom(const std::string& value, int default_port, const EnvLookup& env, PeerPlan* plan,
               std::string* error) {
  if (value == "slurm") return ParseSlurm(default_port, env, plan, error);
  if (StartsWith(value, "dns:")) {
    std::string name = value.substr(4);
    int port = default_port;
    const size_t colon = name.rfind(':');
    if (colon != std::string::npos) {
      if (!ParsePort(name.substr(colon + 1), &port)) {
        *error =
            "--peers-from " + value + ": '" + name.substr(colon + 1) + "' is not a port (1-65535)";
        return false;
      }
      name.resize(colon);
    }
    if (name.empty() || name.front() == '[' || !ValidHost(name)) {
      *error = "--peers-from " + value + ": '" + name + "' is not a DNS name (dns:NAME[:PORT])";
      return false;
    }
    plan->dns.push_back({name, port});
    return true;
  }
  if (StartsWith(value, "prometheus:")) {
    std::string url = value.substr(11);
    if (!StartsWith(url, "http://") && !StartsWith(url, "https://")) {
      *error = "--peers-from " + value + ": expected prometheus:http(s)://HOST[:PORT][:JOB]";
      return false;
    }
    std::string job = kDefaultPrometheusJob;
    const size_t after = url.find("://") + 3;
    const size_t colon = url.rfind(':');
    // A last ":x" after the host that is neither a port nor part of a path is the scrape job.
    if (colon != std::string::npos && colon >= after) {
      const std::string tail = url.substr(colon + 1);
      if (!AllDigits(tail) && tail.find('/') == std::string::npos &&
          tail.find(']') == std::string::npos) {
        if (tail.empty()) {
          *error = "--peers-from " + value + ": empty scrape job after ':'";
          return false;
        }
        job = tail;
        url.resize(colon);
      }
    }
    while (!url.empty() && url.back() == '/') url.pop_back();
    PeerUrl check;
    if (url.size() <= after || !UrlPeer(url, 80, &check)) {
      *error = "--peers-from " + value + ": '" + url + "' is not http(s)://HOST[:PORT]";
      return false;
    }
    plan->prometheus.push_back({url, job});
    return true;
  }
  *error =
      "--peers-from " + value + ": unknown source (slurm, dns:NAME[:PORT] or prometheus:URL[:JOB])";
  return false;
}

}  // namespace

bool ParseHostPort(const std::string& text, int default_port, PeerUrl* out) {
  std::string host = text;
  int port = default_port;
  const size_t colon = text.rfind(':');
  const bool bracketed = !text.empty() && text.front() == '[';
  if (colon != std::string::npos && (!bracketed || colon > text.find(']'))) {
    host = text.substr(0, colon);
    if (!ParsePort(text.substr(colon + 1), &port)) return false;
  }
  if (!ValidHost(host) || port < 1 || port > 65535) return false;
  *out = Peer(host, port);
  return true;
}

bool ParsePeerOptions(const std::vector<std::string>& peers,
                      const std::vector<std::string>& peers_from, int default_port,
                      const EnvLookup& env, PeerPlan* plan, std::string* error) {
  *plan = {};
  for (const std::string& p : peers) {
    if (!ParsePeer(p, default_port, plan, error)) return false;
  }
  for (const std::string& f : peers_from) {
    if (!ParseFrom(f, default_port, env, plan, error)) return false;
  }
  return true;
}

}  // namespace ncclscope::exporters
