// The HTTP side: prometheus-cpp's pull exposer (CivetWeb) serving GET /metrics, plus GET /healthz
// answered "ok" by the server itself, and GET /digest (this node's digest, docs/digest.md) when
// given a producer. Everything else is read-only too: the exposer answers other
// methods on /metrics with 405, and unknown paths with 404.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <prometheus/collectable.h>

namespace prometheus {
class Exposer;
}

namespace ncclscope::exporters {

class HttpEndpoint {
 public:
  // Returns the bytes of GET /digest; called from the server's threads, so it must be thread-safe.
  using DigestFn = std::function<std::string()>;

  // Binds `listen` ("ADDR:PORT", port 0 for an ephemeral one) and serves `metrics` on /metrics
  // with 2 threads. Returns null with *error set when it cannot bind (port taken, bad address).
  // The endpoint keeps `metrics` alive. Thread-safe; the server calls metrics->Collect() from its
  // own threads. With `digest`, GET /digest answers its bytes as application/x-protobuf.
  static std::unique_ptr<HttpEndpoint> Start(const std::string& listen,
                                             std::shared_ptr<prometheus::Collectable> metrics,
                                             std::string* error, DigestFn digest = nullptr);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  int port() const { return port_; }  // the bound port (the chosen one for port 0)

 private:
  HttpEndpoint() = default;
  std::shared_ptr<prometheus::Collectable> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  bool serves_digest_ = false;
};

}  // namespace ncclscope::exporters
