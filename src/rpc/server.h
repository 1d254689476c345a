// Server: the master's RPC endpoint (mooncake-protocol(7)) over TCP.
//
// A fixed pool of I/O threads, each running its own epoll loop and
// accepting from the shared listening socket, so a connection lives on one
// thread and needs no locks. Requests are decoded and answered inline in
// arrival order; a client may pipeline many requests on one connection.
// Each connection does the handshake (version, then challenge-response
// authentication when a token is configured) before any operation.
// With a ReplyGate, the replies of one event-loop round are held until the
// gate releases the round's ticket; meanwhile the loop serves other input.
// With a ParkingLot, a handler may park a call (rpc/parking.h): its reply
// comes when the lot is woken or its wait is over, the loop serving others.
// With TLS each connection is a non-blocking SSL object driven by the same
// loop (handshake first; WANT_READ/WANT_WRITE map to epoll interest).
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
#include "common/defaults.h"
#include "common/result.h"
#include "net/tls.h"
#include "rpc/handler.h"
#include "rpc/parking.h"

namespace mc::rpc {

// ReplyGate: when the replies of a round of requests may be sent. After an
// I/O thread handled a round (everything its connections had sent), it asks
// for a ticket and keeps those replies (and any later ones on the same
// connections) until Released() reaches the ticket, serving other requests
// meanwhile; rounds are released in order, so replies stay in order. The
// master's journal makes one commit release many rounds (group commit).
// Thread-safe: called from every I/O thread.
class ReplyGate {
 public:
  virtual ~ReplyGate() = default;
  // `requests`: how many requests the round handled (handshakes not
  // counted). 0 or any ticket <= Released(): nothing to wait for.
  virtual uint64_t Ticket(uint64_t requests) = 0;
  virtual uint64_t Released() const = 0;
  // True once nothing will be released again: held connections are closed
  // without their replies.
  virtual bool Failed() const = 0;
  // `wake` is called, from any thread, whenever Released() grows or Failed()
  // turns true. Called once per I/O thread before it serves.
  virtual void Subscribe(std::function<void()> wake) = 0;
  // Forgets every `wake` (the server stopped).
  virtual void Unsubscribe() = 0;
};

struct ServerOptions {
  std::string address = kDefaultMasterRpcBindAddress;
  uint16_t port = kDefaultMasterRpcPort;     // 0 picks a free port (see Server::port())
  std::string auth_token;                    // empty: no authentication
  uint32_t io_threads = 2;                   // event loops
  uint32_t max_connections = kDefaultMasterMaxConnections;  // beyond: ConnectionError and close
  uint64_t handshake_timeout_us = 5000000;   // connect to authenticated
  uint64_t frame_timeout_us = 10000000;      // a started frame must arrive within
  uint64_t idle_timeout_us = 0;              // 0: idle connections stay
  uint64_t max_pending_output_bytes = 128ull << 20;  // stop reading a peer that does not read
  const Clock* clock = nullptr;              // timeouts; null: SystemClock
  // Holds replies until what they report is durable (the master's journal);
  // null: replies go out at once. Must outlive the server.
  class ReplyGate* reply_gate = nullptr;
  // Lets handlers park calls (long-polls); null: ParkCall answers
  // kUnavailable. Must outlive the server.
  ParkingLot* parking = nullptr;
  // Server TLS context (role kServer); null: plain TCP. With it, a client
  // that does not start with a TLS record gets a plaintext ConnectionError
  // saying TLS is required; without it, a client that starts TLS is logged.
  std::shared_ptr<net::TlsContext> tls;
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
  uint64_t tls_failures = 0;     // failed TLS handshakes and plaintext peers of a TLS server
  uint64_t parked = 0;           // calls a handler parked (each once, however often woken)
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
