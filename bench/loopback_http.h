// A small HTTP/1.1 server for the node digest benchmark: it stands in for the exporters of many
// nodes on one machine, one loopback port per node, answering every GET on a port with that
// node's bytes (the exporter's cached digest). One thread, epoll, non-blocking sockets, one
// request per connection (as libcurl's fetches of distinct hosts are). Not for production: no
// TLS, no keep-alive, requests larger than 8 KiB are cut off.
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace ncclscope::bench {

class LoopbackHttpServer {
 public:
  LoopbackHttpServer() = default;
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  // Listens on 127.0.0.1, one ephemeral port per body. `bodies` must outlive Serve. Returns false
  // with *error when a socket cannot be made (the limit of open files: one per port).
  bool Listen(const std::vector<std::string>* bodies, std::string* error);
  // The port of body i.
  const std::vector<int>& ports() const { return ports_; }
  // Answers requests until *stop is set (checked at least every 100 ms). Returns the number of
  // answers sent.
  uint64_t Serve(const std::atomic<bool>* stop);

 private:
  struct Connection;
  void Accept(int listener_index);
  // Reads what the client sent; once the request's head is complete, queues the answer.
  bool Read(Connection* c);
  // Writes what is queued; false when the connection is done (all sent, or broken).
  static bool Write(Connection* c);
  void Close(Connection* c);

  const std::vector<std::string>* bodies_ = nullptr;
  std::vector<int> listeners_;
  std::vector<int> ports_;
  int epoll_ = -1;
  uint64_t answers_ = 0;
};

}  // namespace ncclscope::bench
