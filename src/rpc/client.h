// MasterClient: typed calls to one master over the RPC protocol.
//
// Thread-safe. Keeps a small pool of connections (up to max_connections);
// each call borrows one, sends its frame and waits for the reply with the
// same request id, so concurrent callers run in parallel on separate
// connections. A connection is opened on demand: TCP connect, Hello, then
// challenge-response Auth; the master must prove it knows the token too.
// Connecting is tried `retries` times with exponential backoff, all within
// rpc_timeout_us x retries (each attempt, connect and handshake, at most
// rpc_timeout_us), then the call fails with RPC_FAIL "master unavailable at
// H:P: ..." (`mooncake` commands exit 4). A request that
// was sent is not re-sent to the same master (PutStart is not idempotent):
// if the connection drops before the reply the call fails with RPC_FAIL; if
// no reply comes in rpc_timeout_us, RPC_TIMEOUT. A client that locates its
// master (an HA group, `locate` set) re-sends the calls of RetriedOnFailover
// to whichever master leads then, within rpc_timeout_us x retries of the
// first send: a new leader knows only what the old one made durable, so a
// PutStart it never saw starts afresh, a PutEnd it already has fails (the
// caller revokes; the object stays complete), reads read. AUTH_FAILED and version mismatches
// (PROTOCOL_ERROR) are returned at once, without retries. With `tls` set the
// connection is TLS (a handshake after connect, before Hello).
#pragma once

#include <functional>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/defaults.h"
#include "net/socket.h"
#include "net/tls.h"
#include "proto/codec.h"

namespace mc::rpc {

struct ClientOptions {
  std::string master = kDefaultMasterAddress;  // host:port
  // Where the master is now, asked before each connection attempt
  // (`moved_on`: the attempt before failed); null: `master` itself. Lets a
  // client follow a failover (client/master_locator.h): with it, connecting
  // goes on until rpc_timeout_us x retries has passed, however many
  // attempts that takes.
  std::function<Result<std::string>(bool moved_on)> locate;
  std::string auth_token;                  // empty: none
  uint64_t rpc_timeout_us = kDefaultRpcTimeoutUs;  // per call, and per connection attempt
  uint32_t retries = kDefaultRpcRetries;           // connection attempts per call
  uint64_t initial_backoff_us = 20000;     // doubles after each failed attempt
  uint64_t max_backoff_us = 1000000;
  uint32_t max_connections = 4;
  // Client TLS context (role kClient); null: plain TCP. The master's
  // certificate must carry the host of `master`.
  std::shared_ptr<net::TlsContext> tls;
};

// The calls a client that follows an HA group sends again to the new leader
// when the old one dropped them unanswered: the data path's (puts, gets,
// removes, lookups). Not mounts (stores remount by themselves), tasks or
// bulk removes, whose repeat would not mean the same.
bool RetriedOnFailover(proto::Opcode op);

class MasterClient {
 public:
  explicit MasterClient(ClientOptions options);
  ~MasterClient();
  MasterClient(const MasterClient&) = delete;
  MasterClient& operator=(const MasterClient&) = delete;

  // The one typed call, for every operation of the table (proto/ops.h):
  // encodes the request, sends it and decodes the reply (Empty when the
  // operation's reply is a bare Status). A notification (OpTraits::
  // kNotification, e.g. ReleaseLeases) returns once its frame is sent and
  // the master answers nothing: an error means it may not have arrived.
  template <proto::Opcode op>
  Result<typename proto::OpTraits<op>::Reply> Invoke(
      const typename proto::OpTraits<op>::Request& req) {
    using Reply = typename proto::OpTraits<op>::Reply;
    std::string payload;
    proto::EncodePayload(req, &payload);
    if constexpr (proto::OpTraits<op>::kNotification) {
      static_assert(std::is_same_v<Reply, proto::Empty>, "a notification has no reply");
      MC_RETURN_IF_ERROR(Notify(op, payload));
      return proto::Empty{};
    } else {
      MC_ASSIGN_OR_RETURN(std::string reply, Call(op, payload));
      return proto::DecodeReply<Reply>(reply, proto::OpcodeName(op));
    }
  }

  // ReleaseLeases deferred: the frame leaves in front of the next call's
  // request, in the same send (the master handles a connection's frames in
  // order, so that call already sees the leases released), or after at most
  // kDeferredNotifyUs on an idle connection when no call comes. Saves a
  // send, and the master a wake-up, per batch get. Frames still queued when
  // the client is destroyed go out on an idle connection if there is one;
  // any that are lost end with their leases' TTL, as a lost ReleaseLeases.
  void ReleaseLeasesSoon(const msg::Batch<msg::KeyRequest>& req);

  // Sends a notification frame (IsNotification) without waiting.
  Status Notify(proto::Opcode op, std::string_view request_payload);

  // Sends one request frame and returns the reply payload (status + body).
  // Invoke is this plus the codecs.
  Result<std::string> Call(proto::Opcode op, std::string_view request_payload);

  const std::string& master() const { return options_.master; }

  struct Conn;
  // Longest a deferred notification waits for a call to carry it; past
  // kMaxDeferredFrames queued frames it is sent at once.
  static constexpr uint64_t kDeferredNotifyUs = 1000;
  static constexpr size_t kMaxDeferredFrames = 16;

 private:
  // One send and its reply; `*sent`: the request left and its connection
  // then failed (what a failover retries).
  Result<std::string> CallOnce(proto::Opcode op, std::string_view request_payload,
                               uint64_t connect_by_us, bool* sent);
  // `connect_by_us`: when connecting must give up (0: rpc_timeout x retries
  // from the first attempt).
  Result<std::unique_ptr<Conn>> Acquire(uint64_t deadline_us, uint64_t connect_by_us = 0);
  void Release(std::unique_ptr<Conn> conn);  // null: the connection was dropped
  Result<std::unique_ptr<Conn>> ConnectWithRetries(uint64_t connect_by_us);
  Result<std::unique_ptr<Conn>> ConnectOnce(const net::HostPort& hp, uint64_t timeout_us);
  Status Handshake(Conn* c, uint64_t deadline_us);
  Status Unavailable(const std::string& why) const;
  // Acquires a connection (waiting for a free one until *deadline_us) and
  // sends one frame on it (its request id in *id); *deadline_us becomes the
  // reply's deadline, at least rpc_timeout_us after the connection was had.
  Result<std::unique_ptr<Conn>> SendOne(proto::Opcode op, std::string_view payload,
                                        uint64_t* deadline_us, uint64_t* id,
                                        uint64_t connect_by_us = 0, bool* sent = nullptr);
  // Drops the borrowed connection and names the operation in the error.
  Status Dropped(proto::Opcode op, const Status& st, const char* when);
  using Frames = std::vector<std::pair<proto::Opcode, std::string>>;
  Frames TakeDeferred();
  // Sends `frames` on an idle connection, never opening one; false when
  // none was idle (the frames are then not sent).
  bool SendOnIdle(const Frames& frames);
  void FlushLoop();

  ClientOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;
  uint32_t open_ = 0;  // idle + borrowed

  std::mutex defer_mu_;  // guards the deferred notifications below
  std::condition_variable defer_cv_;
  Frames deferred_;
  uint64_t deferred_since_us_ = 0;  // when the oldest queued frame was queued
  bool flusher_asleep_ = false;      // waiting for a first frame (needs a notify)
  bool stopping_ = false;
  std::thread flusher_;  // started with the first deferred frame
};

}  // namespace mc::rpc
