// Server: the master's RPC endpoint (mooncake-protocol(7)) over TCP.
//
// A fixed pool of I/O threads, each running its own epoll loop and
// accepting from the shared listening socket, so a connection lives on one
// thread and needs no locks. Requests are decoded and answered inline in
// arrival order; a client may pipeline many requests on one connection.
// Each connection does the handshake (version, then challenge-response
// authentication when a token is configured) before any operation.
// With `before_reply` set, the replies of one event-loop round are held
// until it returns (see ServerOptions).
// Framing errors get a ConnectionError frame and a close; payload errors
// and unknown opcodes get an error reply and the connection lives on.
// Start/Stop from one thread; stats() from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "rpc/handler.h"

namespace mc::rpc {

struct ServerOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 50051;                     // 0 picks a free port (see Server::port())
  std::string auth_token;                    // empty: no authentication
  uint32_t io_threads = 2;                   // event loops
  uint32_t max_connections = 4096;           // beyond: ConnectionError and close
  uint64_t handshake_timeout_us = 5000000;   // connect to authenticated
  uint64_t frame_timeout_us = 10000000;      // a started frame must arrive within
  uint64_t idle_timeout_us = 0;              // 0: idle connections stay
  uint64_t max_pending_output_bytes = 128ull << 20;  // stop reading a peer that does not read
  const Clock* clock = nullptr;              // timeouts; null: SystemClock
  // Called on an I/O thread after it handled a round of requests (from any
  // number of its connections) and before it sends their replies; the master
  // waits there for its journal, so a reply is sent only once the change it
  // reports is durable, and one fsync covers the whole round. Returning false
  // closes those connections without replies. Empty: replies go out at once.
  std::function<bool()> before_reply;
};

struct ServerStats {
  uint64_t accepted = 0;
  uint64_t refused = 0;          // over max_connections
  uint64_t active = 0;
  uint64_t requests = 0;
  uint64_t protocol_errors = 0;  // connections closed for bad framing or handshake
  uint64_t auth_failures = 0;
  uint64_t timeouts = 0;         // connections closed by a timeout
  uint64_t bytes_received = 0;   // counted after the bytes are processed
};

class Server {
 public:
  // `handler` must outlive the server.
  Server(ServerOptions options, Handler* handler);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts the I/O threads. RPC_FAIL naming the address on failure.
  Status Start();
  // The bound port (useful with port 0).
  uint16_t port() const { return port_; }
  // Stops accepting, flushes replies already computed (best effort), closes
  // every connection and joins the threads. Idempotent.
  void Stop();
  ServerStats stats() const;

  struct Counters;
  class Loop;

 private:
  ServerOptions options_;
  Handler* handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::unique_ptr<Counters> counters_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::thread> threads_;
};

}  // namespace mc::rpc
