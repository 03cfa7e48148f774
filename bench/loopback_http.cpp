#include "bench/loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclscope::bench {

namespace {

constexpr size_t kMaxRequest = 8192;

}  // namespace

struct LoopbackHttpServer::Connection {
  int fd = -1;
  size_t body = 0;
  std::string request;
  std::string head;  // the answer's status line and headers, once the request is complete
  size_t sent = 0;   // of head + body
  bool answering = false;
  const std::string* bytes = nullptr;
};

LoopbackHttpServer::~LoopbackHttpServer() {
  for (const int fd : listeners_) close(fd);
  if (epoll_ >= 0) close(epoll_);
}

bool LoopbackHttpServer::Listen(const std::vector<std::string>* bodies, std::string* error) {
  bodies_ = bodies;
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) {
    *error = std::string("epoll_create1: ") + std::strerror(errno);
    return false;
  }
  for (size_t i = 0; i < bodies->size(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *error = "socket " + std::to_string(i) + ": " + std::strerror(errno) +
               " (one open file per simulated node: raise `ulimit -n`)";
      return false;
    }
    listeners_.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      *error = "listening socket " + std::to_string(i) + ": " + std::strerror(errno);
      return false;
    }
    ports_.push_back(ntohs(addr.sin_port));
    epoll_event ev{};
    ev.events = EPOLLIN;
    // Listeners are told apart from connections by the low bit (connections are aligned).
    ev.data.u64 = uint64_t{i} << 1 | 1;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("epoll_ctl: ") + std::strerror(errno);
      return false;
    }
  }
  return true;
}

void LoopbackHttpServer::Accept(int listener_index) {
  for (;;) {
    const int fd = accept4(listeners_[static_cast<size_t>(listener_index)], nullptr, nullptr,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: all accepted; anything else: the client gave up
    auto* c = new Connection;
    c->fd = fd;
    c->body = static_cast<size_t>(listener_index);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ev.data.ptr = c;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) Close(c);
  }
}

bool LoopbackHttpServer::Read(Connection* c) {
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
      c->request.append(buf, static_cast<size_t>(n));
      if (c->request.size() > kMaxRequest) return false;
      continue;
    }
    if (n == 0) return c->answering;  // the client closed its side
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    break;
  }
  if (!c->answering && c->request.find("\r\n\r\n") != std::string::npos) {
    c->answering = true;
    const bool get = c->request.rfind("GET ", 0) == 0;
    c->bytes = &(*bodies_)[c->body];
    c->head =
        get ? "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: " +
                  std::to_string(c->bytes->size()) + "\r\nConnection: close\r\n\r\n"
            : "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    if (!get) c->bytes = nullptr;
  }
  return true;
}

bool LoopbackHttpServer::Write(Connection* c) {
  if (!c->answering) return true;
  const size_t body = c->bytes != nullptr ? c->bytes->size() : 0;
  while (c->sent < c->head.size() + body) {
    const char* from = c->sent < c->head.size() ? c->head.data() + c->sent
                                                : c->bytes->data() + (c->sent - c->head.size());
    const size_t left =
        c->sent < c->head.size() ? c->head.size() - c->sent : body - (c->sent - c->head.size());
    const ssize_t n = send(c->fd, from, left, MSG_NOSIGNAL);
    if (n > 0) {
      c->sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // wait for EPOLLOUT
  }
  return false;  // all sent
}

void LoopbackHttpServer::Close(Connection* c) {
  close(c->fd);
  delete c;
}

uint64_t LoopbackHttpServer::Serve(const std::atomic<bool>* stop) {
  epoll_event events[256];
  while (!stop->load()) {
    const int n = epoll_wait(epoll_, events, 256, 100);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if ((tag & 1) != 0) {
        Accept(static_cast<int>(tag >> 1));
        continue;
      }
      auto* c = static_cast<Connection*>(events[i].data.ptr);
      const bool broken = (events[i].events & (EPOLLERR | EPOLLHUP)) != 0 && !c->answering;
      if (broken || !Read(c)) {
        Close(c);
        continue;
      }
      const bool was_answering = c->answering;
      if (!Write(c)) {
        if (was_answering) ++answers_;
        Close(c);
      }
    }
  }
  return answers_;
}

}  // namespace ncclscope::bench
