// TcpDataServer: the store side of the TCP data path. Serves WRITE and READ
// requests (format in data_protocol.h) straight into and out of segment
// memory: bytes are recv()'d into the destination and send()'d from the
// source, with no intermediate copy.
//
// One thread accepts; each connection (persistent, at most max_connections)
// is served by its own blocking thread, which on loopback with 2 cores beats
// an event loop that would add a hop. Every request range is checked against
// the segment bounds and then handed, with the grant it carries, to the
// store's AccessCheck (access.h) before a byte moves. A refused request is
// answered with the callback's status and the connection keeps serving; a
// malformed one is answered and closed; both are counted and logged (refusals
// rate-limited). Optional authentication: with a token set, each connection must
// first answer the HELLO nonce with HMAC-SHA256(token, ...); the token itself
// never crosses the wire. With `tls` set each connection is TLS first (the
// handshake runs in the connection's thread; a client that sends nothing for
// 2 s or no TLS record gets a plaintext error reply saying TLS is required).
//
// Thread-safe: Stop() and stats() may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/result.h"
#include "net/socket.h"
#include "net/stream_io.h"
#include "net/tls.h"
#include "transfer/access.h"
#include "transfer/data_protocol.h"
#include "transfer/term_fence.h"
#include "transfer/transport.h"
#include "transfer/write_epochs.h"

namespace mc::transfer {

class RdmaResponder;

struct TcpDataServerOptions {
  std::string listen_host = "0.0.0.0";  // IPv4 literal
  uint16_t port = 0;                    // 0 = the kernel picks
  uint32_t max_connections = 128;
  uint64_t max_frame_bytes = 64ull << 20;  // largest WRITE/READ length
  int idle_timeout_ms = 600000;            // close a connection idle this long
  std::string auth_token;                  // empty = no authentication
  net::SocketTuning tuning;                // io_timeout_us bounds a stalled frame
  const Clock* clock = nullptr;            // wall time of the refusal log window; null: SystemClock
  std::shared_ptr<net::TlsContext> tls;    // server role; null: plain TCP
  RdmaResponder* rdma = nullptr;           // answers ops 4 and 5; null: NOT_SUPPORTED
  // The segment's write epochs (transfer/write_epochs.h): WRITEs count in
  // them, READ_SEALED checks them. Invalid (RDMA peers write one-sided, or
  // none given): READ_SEALED naming a seal is NOT_SUPPORTED.
  WriteEpochs epochs;
  // Refuses WRITEs and READs under grants of a deposed master's term
  // (transfer/term_fence.h); null: no fencing (a segment no master grants
  // for, e.g. the p2p engine's). READ_SEALED is not fenced: its seal proves
  // its bytes.
  std::shared_ptr<TermFence> fence;
};

struct TcpDataServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_connections
  uint64_t requests_served = 0;
  uint64_t requests_refused = 0;     // bounds or AccessCheck
  uint64_t protocol_errors = 0;      // malformed frames (connection closed)
  uint64_t auth_failures = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t tls_failures = 0;         // failed handshakes, plaintext clients refused
  uint64_t rdma_connects = 0;  // RDMA_CONNECT handshakes answered
  uint64_t sealed_reads = 0;   // READ_SEALED served
  uint64_t stale_reads = 0;    // READ_SEALED answered REPLICA_IS_GONE
  uint64_t retires = 0;        // RETIREs served (the master's)
};

// Bound on log lines about refused requests (the rest are only counted).
inline constexpr uint64_t kMaxRefusalLogsPerWindow = 10;
inline constexpr uint64_t kRefusalLogWindowMs = 10000;

class TcpDataServer {
 public:
  // Serves [base, base + size_bytes); the memory must outlive the server.
  // A null base serves addresses of this process (offset = address), which
  // `check` must confine to memory that stays mapped (p2p/memory_registry.h).
  static Result<std::unique_ptr<TcpDataServer>> Start(uint8_t* base, uint64_t size_bytes,
                                                      AccessCheck check,
                                                      TcpDataServerOptions options);
  ~TcpDataServer();
  TcpDataServer(const TcpDataServer&) = delete;
  TcpDataServer& operator=(const TcpDataServer&) = delete;

  uint16_t port() const { return port_; }
  // Stops accepting, closes every connection and joins all threads. Idempotent.
  void Stop();
  TcpDataServerStats stats() const;

 private:
  struct Conn {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
    uint64_t id = 0;
  };
  struct Counters;
  class ConnIo;  // a connection's buffered reads and batched replies

  TcpDataServer() = default;
  void AcceptLoop();
  void ReapFinished(bool all);
  void Serve(Conn* conn);
  // TLS handshake of an accepted connection; null (logged, counted) when
  // the client is plaintext or the handshake fails.
  net::SslPtr AcceptTls(int fd);
  bool Authenticate(net::Stream fd, const std::array<uint8_t, wire::kNonceBytes>& nonce);
  // Serves one request after its header; false to close the connection.
  bool Handle(ConnIo& io, uint64_t conn_id, const wire::Request& req);
  bool HandleRdma(ConnIo& io, uint64_t conn_id, const wire::Request& req);
  // READ_SEALED (op 6): the bytes go out only if the epochs prove them.
  bool HandleSealedRead(ConnIo& io, const wire::Request& req);
  // Answers a verdict other than kServe; false to close the connection.
  bool Decline(ConnIo& io, const wire::Request& req, const RequestVerdict& verdict);
  // Enters the fence for a screened request (no fence: an empty pass).
  // False: refused and answered (or the connection failed: `*alive`).
  bool PassFence(ConnIo& io, const wire::Request& req, OpKind op,
                 std::optional<TermFence::Pass>* pass, bool* alive);
  // Logs a refused request, at most kMaxRefusalLogsPerWindow per window.
  void LogRefusal(net::Stream fd, OpKind op, const Status& st);

  uint8_t* base_ = nullptr;
  uint64_t size_bytes_ = 0;
  AccessCheck check_;
  TcpDataServerOptions options_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that interrupts the accept poll on Stop
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;                 // guards conns_
  std::list<Conn> conns_;
  uint64_t next_conn_id_ = 1;  // guarded by mu_
  std::unique_ptr<Counters> counters_;
  const Clock* clock_ = nullptr;  // options_.clock or SystemClock
  std::mutex log_mu_;  // guards the refusal log window
  uint64_t refusal_window_start_ms_ = 0;
  uint64_t refusals_logged_ = 0;
  uint64_t refusals_suppressed_ = 0;
};

}  // namespace mc::transfer
