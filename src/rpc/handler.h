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
#include "proto/ops_codec.h"

namespace mc::rpc {

class Handler {
 public:
  virtual ~Handler() = default;

  virtual Status MountSegment(const msg::MountSegmentRequest& req);
  virtual Status UnmountSegment(const msg::UnmountSegmentRequest& req);
  virtual Result<msg::PingReply> Ping(const msg::PingRequest& req);
  virtual Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& req);
  virtual Status PutEnd(const msg::KeyRequest& req);
  virtual Status PutRevoke(const msg::KeyRequest& req);
  virtual Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& req);
  virtual Result<bool> ExistKey(const msg::KeyRequest& req);
  virtual Status Remove(const msg::RemoveRequest& req);
  virtual Result<msg::RemoveAllReply> RemoveAll();
  // By default RemoveAll when not forced; a forced one needs the override.
  virtual Result<msg::RemoveAllReply> RemoveAllEx(const msg::RemoveAllRequest& req);
  virtual Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& req);
  virtual Result<msg::ClusterStatusReply> ClusterStatus();

  virtual Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& req);
  // By default BatchPutStart of the same requests, placement included (it
  // rides in PutStartRequest::options).
  virtual Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& req);
  virtual Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& req);
  virtual Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req);
  virtual Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& req);
  virtual Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req);
  virtual Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& req);
  // A notification (the server sends no reply): the client is done reading
  // these keys, so their leases may end early.
  virtual Status ReleaseLeases(const msg::Batch<msg::KeyRequest>& req);
  // A notification: what a client moved since its last report, per path.
  virtual Status ReportTransfers(const msg::TransferReport& req);

  // Replica operations (msg/ops_messages.h); NOT_SUPPORTED by default.
  virtual Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchUpsertStart(
      const msg::Batch<msg::PutStartExRequest>& req);
  virtual Result<msg::TaskId> CreateCopyTask(const msg::CreateCopyTaskRequest& req);
  virtual Result<msg::TaskId> CreateMoveTask(const msg::CreateMoveTaskRequest& req);
  virtual Result<msg::TaskInfo> QueryTask(const msg::TaskRequest& req);
  virtual Result<msg::TaskStartReply> TaskStart(const msg::TaskRequest& req);
  virtual Status TaskEnd(const msg::TaskEndRequest& req);
  virtual Result<msg::ReplicaClearReply> BatchReplicaClear(const msg::ReplicaClearRequest& req);
  virtual Result<msg::RemoveByRegexReply> RemoveByRegex(const msg::RemoveByRegexRequest& req);
};

// Decodes `payload` as the request of `op`, calls `handler` and appends the
// encoded reply payload to `out`. A payload that does not decode gets a
// PROTOCOL_ERROR reply, an unknown opcode NOT_SUPPORTED; never throws.
// Hello/Auth are not operations (the server handles them) and get
// PROTOCOL_ERROR here.
void Dispatch(Handler& handler, proto::Opcode op, std::string_view payload, std::string* out);

}  // namespace mc::rpc
