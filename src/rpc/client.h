// MasterClient: typed calls to one master over the RPC protocol.
//
// Thread-safe. Keeps a small pool of connections (up to max_connections);
// each call borrows one, sends its frame and waits for the reply with the
// same request id, so concurrent callers run in parallel on separate
// connections. A connection is opened on demand: TCP connect, Hello, then
// challenge-response Auth; the master must prove it knows the token too.
// Connecting is retried `retries` times with exponential backoff, then the
// call fails with RPC_FAIL "master unavailable at H:P: ...". A request that
// was sent is never re-sent (PutStart is not idempotent): if the connection
// drops before the reply the call fails with RPC_FAIL; if no reply comes in
// rpc_timeout_us, RPC_TIMEOUT. AUTH_FAILED and version mismatches
// (PROTOCOL_ERROR) are returned at once, without retries.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proto/codec.h"
#include "rpc/socket.h"

namespace mc::rpc {

using namespace mc::proto;

struct ClientOptions {
  std::string master = "127.0.0.1:50051";  // host:port
  std::string auth_token;                  // empty: none
  uint64_t rpc_timeout_us = 5000000;       // per call, and per connection attempt
  uint32_t retries = 5;                    // connection attempts per call
  uint64_t initial_backoff_us = 20000;     // doubles after each failed attempt
  uint64_t max_backoff_us = 1000000;
  uint32_t max_connections = 4;
};

class MasterClient {
 public:
  explicit MasterClient(ClientOptions options);
  ~MasterClient();
  MasterClient(const MasterClient&) = delete;
  MasterClient& operator=(const MasterClient&) = delete;

  Status MountSegment(const MountSegmentRequest& req);
  Status UnmountSegment(const UnmountSegmentRequest& req);
  Result<PingReply> Ping(const PingRequest& req);
  Result<PutStartReply> PutStart(const PutStartRequest& req);
  Status PutEnd(const KeyRequest& req);
  Status PutRevoke(const KeyRequest& req);
  Result<GetReplicaListReply> GetReplicaList(const KeyRequest& req);
  Result<bool> ExistKey(const KeyRequest& req);
  Status Remove(const RemoveRequest& req);
  Result<RemoveAllReply> RemoveAll();
  Result<ListKeysReply> ListKeys(const ListKeysRequest& req);
  Result<ClusterStatusReply> ClusterStatus();
  Result<Batch<BatchItem<PutStartReply>>> BatchPutStart(const Batch<PutStartRequest>& req);
  Result<Batch<Status>> BatchPutEnd(const Batch<KeyRequest>& req);
  Result<Batch<Status>> BatchPutRevoke(const Batch<KeyRequest>& req);
  Result<Batch<BatchItem<GetReplicaListReply>>> BatchGetReplicaList(const Batch<KeyRequest>& req);
  Result<Batch<BatchItem<bool>>> BatchExistKey(const Batch<KeyRequest>& req);
  Result<Batch<Status>> BatchRemove(const Batch<RemoveRequest>& req);
  // A notification: returns once the frame is sent (the master answers
  // nothing). An error means it may not have arrived; the leases then end
  // by time, as they would without it.
  Status ReleaseLeases(const Batch<KeyRequest>& req);

  // Sends a notification frame (IsNotification) without waiting.
  Status Notify(Opcode op, std::string_view request_payload);

  // Sends one request frame and returns the reply payload (status + body).
  // The typed methods above are this plus the codecs.
  Result<std::string> Call(Opcode op, std::string_view request_payload);

  // Typed form of Call for any operation.
  template <Opcode op>
  Result<typename OpTraits<op>::Reply> Invoke(const typename OpTraits<op>::Request& req) {
    std::string payload;
    EncodePayload(req, &payload);
    MC_ASSIGN_OR_RETURN(std::string reply, Call(op, payload));
    return DecodeReply<typename OpTraits<op>::Reply>(reply, OpcodeName(op));
  }

  const std::string& master() const { return options_.master; }

  struct Conn;

 private:
  Result<std::unique_ptr<Conn>> Acquire(uint64_t deadline_us);
  void Release(std::unique_ptr<Conn> conn);  // null: the connection was dropped
  Result<std::unique_ptr<Conn>> ConnectWithRetries();
  Result<std::unique_ptr<Conn>> ConnectOnce(const HostPort& hp);
  Status Handshake(Conn* c, uint64_t deadline_us);
  Status Unavailable(const std::string& why) const;
  // Acquires a connection and sends one frame on it (its request id in *id).
  Result<std::unique_ptr<Conn>> SendOne(Opcode op, std::string_view payload, uint64_t deadline_us,
                                        uint64_t* id);
  // Drops the borrowed connection and names the operation in the error.
  Status Dropped(Opcode op, const Status& st, const char* when);

  ClientOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;
  uint32_t open_ = 0;  // idle + borrowed
};

}  // namespace mc::rpc
