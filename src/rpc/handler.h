// Handler: what the RPC server calls for each decoded master request.
//
// One typed method per operation of mooncake-protocol(7). The server calls
// them from its I/O threads, concurrently: implementations must be
// thread-safe and should not block (they run inline on the event loop).
// Every method has a default: single operations answer NOT_SUPPORTED, and
// batch operations call the single form once per element, so the master
// glue only needs the operations it supports (and can override a batch form
// when it can do better under one lock).
#pragma once

#include <string>
#include <string_view>

#include "proto/codec.h"

namespace mc::rpc {

using namespace mc::proto;  // the vocabulary: requests and replies

class Handler {
 public:
  virtual ~Handler() = default;

  virtual Status MountSegment(const MountSegmentRequest& req);
  virtual Status UnmountSegment(const UnmountSegmentRequest& req);
  virtual Result<PingReply> Ping(const PingRequest& req);
  virtual Result<PutStartReply> PutStart(const PutStartRequest& req);
  virtual Status PutEnd(const KeyRequest& req);
  virtual Status PutRevoke(const KeyRequest& req);
  virtual Result<GetReplicaListReply> GetReplicaList(const KeyRequest& req);
  virtual Result<bool> ExistKey(const KeyRequest& req);
  virtual Status Remove(const RemoveRequest& req);
  virtual Result<RemoveAllReply> RemoveAll();
  virtual Result<ListKeysReply> ListKeys(const ListKeysRequest& req);
  virtual Result<ClusterStatusReply> ClusterStatus();

  virtual Result<Batch<BatchItem<PutStartReply>>> BatchPutStart(const Batch<PutStartRequest>& req);
  // By default BatchPutStart of the same requests, placement included (it
  // rides in PutStartRequest::options).
  virtual Result<Batch<BatchItem<PutStartReply>>> BatchPutStartEx(
      const Batch<PutStartExRequest>& req);
  virtual Result<Batch<Status>> BatchPutEnd(const Batch<KeyRequest>& req);
  virtual Result<Batch<Status>> BatchPutRevoke(const Batch<KeyRequest>& req);
  virtual Result<Batch<BatchItem<GetReplicaListReply>>> BatchGetReplicaList(
      const Batch<KeyRequest>& req);
  virtual Result<Batch<BatchItem<bool>>> BatchExistKey(const Batch<KeyRequest>& req);
  virtual Result<Batch<Status>> BatchRemove(const Batch<RemoveRequest>& req);
  // A notification (the server sends no reply): the client is done reading
  // these keys, so their leases may end early.
  virtual Status ReleaseLeases(const Batch<KeyRequest>& req);
};

// Decodes `payload` as the request of `op`, calls `handler` and appends the
// encoded reply payload to `out`. A payload that does not decode gets a
// PROTOCOL_ERROR reply, an unknown opcode NOT_SUPPORTED; never throws.
// Hello/Auth are not operations (the server handles them) and get
// PROTOCOL_ERROR here.
void Dispatch(Handler& handler, Opcode op, std::string_view payload, std::string* out);

}  // namespace mc::rpc
