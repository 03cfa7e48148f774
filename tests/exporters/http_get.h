// A minimal HTTP/1.0 client on plain sockets, for scraping an exporter as Prometheus does.
#pragma once

#include <string>

namespace ncclscope::testing {

struct HttpResponse {
  int status = 0;  // 0 when the connection failed
  std::string body;
};

// `method` `path` on 127.0.0.1:port; the whole response (the server closes the connection).
HttpResponse HttpRequest(int port, const std::string& method, const std::string& path);
inline HttpResponse HttpGet(int port, const std::string& path) {
  return HttpRequest(port, "GET", path);
}

}  // namespace ncclscope::testing
