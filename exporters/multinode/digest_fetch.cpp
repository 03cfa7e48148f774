#include "exporters/multinode/digest_fetch.h"

#include <curl/curl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>

#include "trace/clock.h"

namespace ncclscope::exporters {
namespace {

constexpr size_t kMaxSources = size_t{1} << 16;
constexpr size_t kMaxHostfileBytes = size_t{16} << 20;

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// "http://h:p" and "http://h:p/" get the digest path; any other path is the user's.
std::string DigestUrl(const std::string& url) {
  const size_t scheme_end = url.find("://") + 3;
  const size_t path = url.find('/', scheme_end);
  if (path == std::string::npos) return url + "/digest";
  if (path == url.size() - 1) return url + "digest";
  return url;
}

bool ValidHost(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  if (host.front() == '[') {
    return host.back() == ']' && host.size() > 2 &&
           std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
             return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
           });
  }
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
}

// One hostfile line, comment and blanks removed: "host", "host:port", "[v6]", "[v6]:port".
bool HostLineUrl(const std::string& line, std::string* url) {
  std::string host = line;
  int port = kExporterDefaultPort;
  const size_t colon = line.rfind(':');
  const bool bracketed = !line.empty() && line.front() == '[';
  if (colon != std::string::npos && (!bracketed || colon > line.find(']'))) {
    host = line.substr(0, colon);
    const std::string digits = line.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return false;
    }
    port = std::stoi(digits);
    if (port < 1 || port > 65535) return false;
  }
  if (!ValidHost(host)) return false;
  *url = "http://" + host + ":" + std::to_string(port) + "/digest";
  return true;
}

bool IsText(const std::string& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\n' || u == '\r' || u == '\t' || (u >= 0x20 && u < 0x7f);
  });
}

bool ReadFile(const std::string& path, size_t max_bytes, std::string* bytes, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::strerror(errno);
    return false;
  }
  bytes->clear();
  char buf[65536];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes->append(buf, static_cast<size_t>(in.gcount()));
    if (bytes->size() > max_bytes) {
      *why = "more than " + std::to_string(max_bytes) + " bytes";
      return false;
    }
  }
  if (in.bad()) {
    *why = "read error";
    return false;
  }
  return true;
}

bool ExpandHostfile(const std::string& path, const std::string& text,
                    std::vector<DigestSource>* out, std::string* error) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    line.erase(line.begin(), std::find_if_not(line.begin(), line.end(), blank));
    line.erase(std::find_if_not(line.rbegin(), line.rend(), blank).base(), line.end());
    if (line.empty()) continue;
    std::string url;
    if (!HostLineUrl(line, &url)) {
      *error = path + ":" + std::to_string(number) + ": '" + line +
               "' is not host[:port] (a hostfile names one exporter per line)";
      return false;
    }
    out->push_back({DigestSource::Kind::kUrl, url});
  }
  return true;
}

bool ExpandOne(const std::string& from, std::vector<DigestSource>* out, std::string* error) {
  if (StartsWith(from, "http://") || StartsWith(from, "https://")) {
    if (from.find("://") + 3 >= from.size()) {
      *error = "--from " + from + ": no host in the URL";
      return false;
    }
    out->push_back({DigestSource::Kind::kUrl, DigestUrl(from)});
    return true;
  }
  if (from.find("://") != std::string::npos) {
    *error = "--from " + from + ": only http:// and https:// URLs are fetched";
    return false;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(from, ec)) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(from, ec)) {
      if (entry.path().extension() == ".digest") files.push_back(entry.path().string());
    }
    if (ec) {
      *error = "--from " + from + ": " + ec.message();
      return false;
    }
    if (files.empty()) {
      *error = "--from " + from + ": a directory without *.digest files";
      return false;
    }
    std::sort(files.begin(), files.end());
    for (std::string& f : files) out->push_back({DigestSource::Kind::kFile, std::move(f)});
    return true;
  }
  std::string bytes, why;
  if (!ReadFile(from, kMaxHostfileBytes, &bytes, &why)) {
    // Too large for a hostfile: a (large) digest; the fetch reads it with its own bound.
    if (std::filesystem::is_regular_file(from, ec)) {
      out->push_back({DigestSource::Kind::kFile, from});
      return true;
    }
    *error = "--from " + from + ": not a URL, and cannot be read: " + why;
    return false;
  }
  // A digest is protobuf (binary from its first byte); a hostfile is text.
  if (!bytes.empty() && IsText(bytes)) return ExpandHostfile(from, bytes, out, error);
  out->push_back({DigestSource::Kind::kFile, from});
  return true;
}

void FetchFile(const std::string& path, const FetchOptions& o, FetchedDigest* d) {
  struct stat st {};
  std::string why;
  if (stat(path.c_str(), &st) != 0) {
    d->error = path + ": " + std::strerror(errno);
    return;
  }
  if (!ReadFile(path, o.max_bytes, &d->bytes, &why)) {
    d->error = path + ": " + why;
    return;
  }
  // The file's time stamp, not the read: a digest no one rewrites any more must look as old as it
  // is (its producer may be gone).
  d->received_at_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  d->ok = true;
}

struct Transfer {
  FetchedDigest* out;
  size_t max_bytes;
  bool too_large = false;
};

size_t Append(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->out->bytes.size() + size * n > t->max_bytes) {
    t->too_large = true;
    return 0;  // aborts the transfer
  }
  t->out->bytes.append(data, size * n);
  return size * n;
}

void FetchUrls(const std::vector<size_t>& which, const std::vector<DigestSource>& sources,
               const FetchOptions& o, std::vector<FetchedDigest>* results) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(o.parallel));
  std::vector<Transfer> transfers;
  std::vector<CURL*> easies;
  transfers.reserve(which.size());
  const long timeout_ms = static_cast<long>(o.timeout_s * 1000);
  for (const size_t i : which) {
    transfers.push_back({&(*results)[i], o.max_bytes});
    CURL* easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_URL, sources[i].where.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, Append);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfers.back());
    curl_easy_setopt(easy, CURLOPT_PRIVATE, &transfers.back());
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "ncclscope-analyze");
    curl_multi_add_handle(multi, easy);
    easies.push_back(easy);
  }
  int running = 1;
  while (running > 0) {
    if (curl_multi_perform(multi, &running) != CURLM_OK) break;
    if (running > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      FetchedDigest& d = *t->out;
      d.received_at_ns = trace::RealtimeNs();
      long status = 0;
      double total_s = 0;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
      curl_easy_getinfo(msg->easy_handle, CURLINFO_TOTAL_TIME, &total_s);
      d.round_trip_s = total_s;
      if (t->too_large) {
        d.error = d.source + ": answer larger than " + std::to_string(o.max_bytes) + " bytes";
      } else if (msg->data.result != CURLE_OK) {
        d.error = d.source + ": " + curl_easy_strerror(msg->data.result);
      } else if (status != 200) {
        d.error = d.source + ": HTTP status " + std::to_string(status) +
                  (status == 404 ? " (an exporter of this version serves /digest)" : "");
      } else {
        d.ok = true;
      }
      if (!d.ok) d.bytes.clear();
    }
  }
  for (CURL* easy : easies) {
    curl_multi_remove_handle(multi, easy);
    curl_easy_cleanup(easy);
  }
  curl_multi_cleanup(multi);
}

}  // namespace

bool ExpandSources(const std::vector<std::string>& from, std::vector<DigestSource>* out,
                   std::string* error) {
  out->clear();
  for (const std::string& f : from) {
    if (!ExpandOne(f, out, error)) return false;
    if (out->size() > kMaxSources) {
      *error = "--from: more than " + std::to_string(kMaxSources) + " sources";
      return false;
    }
  }
  return true;
}

std::vector<FetchedDigest> FetchDigests(const std::vector<DigestSource>& sources,
                                        const FetchOptions& options) {
  std::vector<FetchedDigest> results(sources.size());
  std::vector<size_t> urls;
  for (size_t i = 0; i < sources.size(); ++i) {
    results[i].source = sources[i].where;
    if (sources[i].kind == DigestSource::Kind::kFile) {
      FetchFile(sources[i].where, options, &results[i]);
    } else {
      urls.push_back(i);
    }
  }
  if (!urls.empty()) FetchUrls(urls, sources, options, &results);
  for (FetchedDigest& d : results) {
    if (!d.ok && d.error.empty()) d.error = d.source + ": not fetched";
  }
  return results;
}

}  // namespace ncclscope::exporters
