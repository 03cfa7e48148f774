#include "exporters/prometheus/http_endpoint.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/exposer.h>

#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace ncclscope::exporters {
namespace {

constexpr char kHealthPath[] = "/healthz";
constexpr char kDigestPath[] = "/digest";

// The /digest producers of the endpoints of this process, by listening port: CivetWeb's
// begin_request callback carries no pointer of ours (the exposer owns the server), but it says
// which port a request came in on.
std::mutex digest_mutex;
std::map<int, HttpEndpoint::DigestFn>& DigestProducers() {
  static std::map<int, HttpEndpoint::DigestFn> producers;
  return producers;
}

HttpEndpoint::DigestFn DigestProducer(int port) {
  std::lock_guard<std::mutex> lock(digest_mutex);
  const auto it = DigestProducers().find(port);
  return it == DigestProducers().end() ? nullptr : it->second;
}

// GET/HEAD /digest: this node's digest, protobuf. Built outside any lock of ours; a failure to
// build (out of memory) is a 500, never a crash of the exporter.
int ServeDigest(mg_connection* conn, const HttpEndpoint::DigestFn& produce, bool get) {
  std::string body;
  try {
    body = produce();
  } catch (const std::exception&) {
    mg_printf(conn,
              "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n"
              "\r\n");
    return 500;
  }
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            body.size());
  if (get) mg_write(conn, body.data(), body.size());
  return 200;
}

// Runs before CivetWeb routes a request. Refuses every method but GET and HEAD on every path (the
// exposer alone would answer 404 to a POST on /metrics, which hides what is wrong), and answers
// /healthz itself: a liveness probe needs no metrics work. Everything else goes on to the
// exposer. Returns the status when handled, 0 otherwise.
int BeginRequest(mg_connection* conn) {
  const mg_request_info* req = mg_get_request_info(conn);
  if (req == nullptr || req->request_method == nullptr) return 0;
  const bool get = std::strcmp(req->request_method, "GET") == 0;
  const bool head = std::strcmp(req->request_method, "HEAD") == 0;
  if (!get && !head) {
    mg_printf(conn,
              "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\n"
              "Connection: close\r\n\r\n");
    return 405;
  }
  if (req->local_uri == nullptr) return 0;
  if (std::strcmp(req->local_uri, kDigestPath) == 0) {
    const HttpEndpoint::DigestFn produce = DigestProducer(req->server_port);
    if (produce) return ServeDigest(conn, produce, get);
    return 0;  // no digest on this endpoint: the exposer's 404
  }
  if (std::strcmp(req->local_uri, kHealthPath) != 0) return 0;
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n%s",
            get ? "ok\n" : "");
  return 200;
}

}  // namespace

std::unique_ptr<HttpEndpoint> HttpEndpoint::Start(const std::string& listen,
                                                  std::shared_ptr<prometheus::Collectable> metrics,
                                                  std::string* error, DigestFn digest) {
  std::unique_ptr<HttpEndpoint> endpoint(new HttpEndpoint());
  static const CivetCallbacks kCallbacks = [] {
    CivetCallbacks c;
    c.begin_request = BeginRequest;
    return c;
  }();
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", "2"}, &kCallbacks);
  } catch (const std::exception& e) {
    *error = "cannot listen on " + listen + ": " + e.what();
    return nullptr;
  }
  endpoint->metrics_ = std::move(metrics);
  endpoint->exposer_->RegisterCollectable(endpoint->metrics_);
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  endpoint->port_ = ports.empty() ? 0 : ports.front();
  if (digest && endpoint->port_ > 0) {
    std::lock_guard<std::mutex> lock(digest_mutex);
    DigestProducers()[endpoint->port_] = std::move(digest);
    endpoint->serves_digest_ = true;
  }
  return endpoint;
}

HttpEndpoint::~HttpEndpoint() {
  // The server stops first (its threads may be calling the producer), then the producer goes.
  exposer_.reset();
  if (serves_digest_) {
    std::lock_guard<std::mutex> lock(digest_mutex);
    DigestProducers().erase(port_);
  }
}

}  // namespace ncclscope::exporters
