// TcpTransport: the client side of the TCP data path (wire format in data_protocol.h).
//
// Keeps a small pool of persistent connections per peer. A large transfer is
// cut into chunks (between min_chunk_bytes, or min_read_chunk_bytes for a
// read, and max_chunk_bytes, about len / streams each) that `streams`
// connections carry in parallel, each
// chunk moved by one large send/recv straight from/into the caller's buffer.
// Each connection keeps two requests in flight, so it never idles waiting
// for an acknowledgement. A batch of small ops (kPipelinedBatchBytes) is not
// striped: each store's ops go pipelined on one connection (RunPipelined).
// A batch is flattened into the same chunk list. A chunk that fails on a
// reused connection (e.g. the server closed it while idle) is retried once on
// a fresh one, which is safe because WRITE and READ are idempotent.
// A peer that cannot be reached (connect fails) or stalls (a send or receive
// makes no progress for io_timeout_us) is unreachable for the rest of the
// batch: its other chunks fail at once instead of each waiting out the
// timeout again, so a batch to a partitioned peer fails within about one
// timeout (connect_timeout_us or io_timeout_us, whichever it hit).
// Thread-safe: concurrent callers share the pool and the helper threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/ceilings.h"
#include "common/defaults.h"
#include "net/socket.h"
#include "net/stream_io.h"
#include "net/tls.h"
#include "transfer/data_protocol.h"
#include "transfer/transport.h"
#include "transfer/worker_pool.h"

namespace mc::transfer {

struct TcpTransportOptions {
  int streams = kDefaultTcpStreams;         // connections one transfer stripes over
  uint64_t min_chunk_bytes = 512ull << 10;  // smaller writes go in one piece
  // Smaller reads go in one piece (capped at max_chunk_bytes). transfer_bench
  // on our 2-core VM, 4 MiB objects: one 4 MiB piece read at ~2.9 GB/s, four
  // 1 MiB pieces on 4 connections at ~3.5-4.4, eight 512 KiB pieces on 8 at
  // ~3.7-6; writes likewise. Small pieces on many connections keep the bytes
  // in flight (streams x pipeline depth x piece) near the cache size, so the
  // receiver's copy finds what the sender's copy just wrote.
  uint64_t min_read_chunk_bytes = 512ull << 10;
  uint64_t max_chunk_bytes = 1ull << 20;  // must be <= the server's max_frame_bytes
  int max_idle_connections_per_peer = 8;
  uint64_t connect_timeout_us = 5000000;
  std::string auth_token;  // empty = none; must match the server's
  net::SocketTuning tuning;
  // Client TLS context (role kClient); null: plain TCP. A store's
  // certificate must carry the host it advertises.
  std::shared_ptr<net::TlsContext> tls;
};

// A batch whose ops are each at most kPipelinedOpBytes and total at most
// kPipelinedBatchBytes goes pipelined on one connection per peer (see
// RunPipelined) instead of being striped over `streams` connections: for
// small objects the cost is per request (syscalls, thread hand-offs), not
// per byte.
inline constexpr uint64_t kPipelinedOpBytes = 64ull << 10;
inline constexpr uint64_t kPipelinedBatchBytes = 1ull << 20;
// Requests sent before their replies are read. Bounded so that neither side
// blocks sending while the other does: READ requests (88 bytes each) and
// WRITE replies (24 bytes, or 536 with an error message) of one window fit
// in the socket buffers whatever the other side is doing.
inline constexpr size_t kPipelineWindowOps = 64;

// Limits checked by the constructor (asserted: a bad value is a caller bug):
// streams at most kMaxTcpStreams (common/ceilings.h).
// Requests in flight per connection.
inline constexpr size_t kPipelineDepth = 2;

// Connects to a data port, reads its HELLO and authenticates when it asks
// (request id kAuthRequestId); returns the socket, ready for requests.
inline constexpr uint64_t kAuthRequestId = 1;
// With `tls`, the TLS handshake comes first; the caller owns the stream
// (CloseStream).
Result<net::Stream> ConnectDataPort(const Endpoint& ep, const std::string& auth_token,
                                    uint64_t connect_timeout_us, const net::SocketTuning& tuning,
                                    const net::TlsContext* tls = nullptr);
void CloseStream(net::Stream s);
// Sends one request with `payload` and returns the reply's payload (at most
// `max_reply_bytes`); an error reply becomes its Status.
Result<std::string> DataPortCall(net::Stream fd, const std::string& peer, uint16_t op,
                                 uint64_t request_id, std::string_view payload,
                                 size_t max_reply_bytes);

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(TcpTransportOptions options = {});
  ~TcpTransport() override;

  std::string_view name() const override { return "tcp"; }
  Status Batch(std::span<TransferOp> ops) override;

  // Closes every idle pooled connection (e.g. after a store restarted).
  void CloseIdle();

 private:
  struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;  // TLS session, owned (CloseConn frees it)
    uint64_t next_request_id = 1;
    bool reused = false;
    net::Stream stream() const { return net::Stream(fd, ssl); }
  };
  static void CloseConn(Conn& c);
  struct Chunk {
    size_t op;  // index into the batch
    uint64_t offset_in_op;
    uint64_t len;
  };

  Result<Conn> Acquire(const Endpoint& ep);
  void Release(const Endpoint& ep, Conn conn);
  Result<Conn> Connect(const Endpoint& ep);
  void DropIdle(const Endpoint& ep);
  using ChunkFailed = std::function<void(size_t chunk, const Status&)>;
  // Peers one Batch found unreachable, shared by its streams.
  class Unreachable {
   public:
    // Records `st` for `ep` when it says the peer is gone (a failed connect,
    // a timeout); other errors (a refused grant) leave the peer usable.
    void Note(const Endpoint& ep, const Status& st);
    // The status that made `ep` unreachable, or OK.
    Status Check(const Endpoint& ep) const;

   private:
    mutable std::mutex mu_;
    std::map<std::string, Status> peers_;
  };

  // Fills `hdr` with the request for `chunk` of `op`; returns its id.
  static uint64_t EncodeChunk(Conn& conn, const TransferOp& op, const Chunk& chunk,
                              uint8_t hdr[wire::kRequestBytes]);
  Status SendChunk(Conn& conn, const TransferOp& op, const Chunk& chunk, uint64_t* request_id);
  // Small batches: the ops of `group` (indices into `ops`, all to one peer)
  // on one connection, kPipelineWindowOps requests sent in one sendmsg and
  // their replies read through a buffer, so a batch of small objects costs
  // about one round trip and a few syscalls rather than two per object. Ops
  // left unfinished by a broken connection go through RunChunkWithRetry.
  void RunPipelined(std::span<TransferOp> ops, const std::vector<size_t>& group,
                    Unreachable* gone);
  // Sends the requests of ops[group[first..first+n)) and reads their
  // replies. Returns how many completed (status set); fewer than n means
  // the connection broke (it is then closed).
  size_t RunWindow(Conn& conn, std::span<TransferOp> ops, const std::vector<size_t>& group,
                   size_t first, size_t n, Unreachable* gone);
  // Reads the reply (and READ data); a failed connection leaves `*broken` true.
  Status FinishChunk(Conn& conn, const TransferOp& op, const Chunk& chunk, uint64_t request_id,
                     bool* broken);
  Status RunChunk(Conn& conn, const TransferOp& op, const Chunk& chunk, bool* broken);
  Status RunChunkWithRetry(const TransferOp& op, const Chunk& chunk, Unreachable* gone);
  // One stream: claims chunks from `next` and keeps up to kPipelineDepth of
  // them in flight on its connection, so the wire never idles waiting for an
  // acknowledgement. Safe because only small frames (requests, WRITE
  // replies) queue unread in either direction.
  void RunStream(std::span<TransferOp> ops, const std::vector<Chunk>& chunks,
                 std::atomic<size_t>* next, const ChunkFailed& failed, Unreachable* gone);

  // Runs `ops` pipelined when the batch is small (kPipelinedBatchBytes);
  // NOT_SUPPORTED, having done nothing, when it is not.
  Status PipelinedBatch(std::span<TransferOp> ops);

  const TcpTransportOptions options_;
  std::mutex mu_;  // guards idle_
  std::map<std::string, std::vector<Conn>> idle_;
  WorkerPool workers_;
};

}  // namespace mc::transfer
