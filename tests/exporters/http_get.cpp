#include "tests/exporters/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace ncclscope::testing {

HttpResponse HttpRequest(int port, const std::string& method, const std::string& path) {
  HttpResponse response;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return response;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return response;
  }
  const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return response;
  }
  std::string all;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<size_t>(n));
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  const size_t space = all.find(' ');
  const size_t body = all.find("\r\n\r\n");
  if (space == std::string::npos || body == std::string::npos) return response;
  response.status = std::atoi(all.c_str() + space + 1);
  response.body = all.substr(body + 4);
  return response;
}

}  // namespace ncclscope::testing
