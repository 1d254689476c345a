// MasterLink: the master calls the client makes, and nothing else. The
// client holds one; Client::Connect makes it over rpc::MasterClient
// (RpcMasterLink), and unit tests put an in-process master behind it.
//
// Implementations are thread-safe: a Client calls them from many threads.
#pragma once

#include <memory>

#include "common/result.h"
#include "msg/messages.h"
#include "msg/ops_messages.h"
#include "msg/tier_messages.h"

namespace mc::rpc {
class MasterClient;
}

namespace mc::client {

class MasterLink {
 public:
  virtual ~MasterLink() = default;

  // put: start, then end (or revoke once a write failed).
  virtual Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& req) = 0;
  virtual Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& req) = 0;
  // With placement wishes; NOT_SUPPORTED from a master without it.
  virtual Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& req) = 0;
  virtual Status PutEnd(const msg::KeyRequest& req) = 0;
  virtual Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) = 0;
  virtual Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req) = 0;

  // get: replica lists (each grants a lease), released once read.
  virtual Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& req) = 0;
  virtual Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& req) = 0;
  // A notification, sent without waiting (rpc::MasterClient::ReleaseLeasesSoon).
  virtual void ReleaseLeasesSoon(const msg::Batch<msg::KeyRequest>& req) = 0;

  virtual Result<bool> ExistKey(const msg::KeyRequest& req) = 0;
  virtual Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req) = 0;
  virtual Status Remove(const msg::RemoveRequest& req) = 0;
  virtual Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& req) = 0;
  // With `force`, leased objects too.
  virtual Result<msg::RemoveAllReply> RemoveAll(bool force) = 0;
  virtual Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& req) = 0;
  // With each key's tier (memory, disk, both); NOT_SUPPORTED unless the
  // link serves it (RpcMasterLink does; an older master answers so too).
  virtual Result<msg::TieredListKeysReply> ListKeysTiered(const msg::ListKeysRequest& req);
  virtual Result<msg::ClusterStatusReply> ClusterStatus() = 0;
  // A notification: what the client moved, by path and direction.
  virtual Status ReportTransfers(const msg::TransferReport& report) = 0;
  // A notification: the hits of the direct-read cache (client/direct_reads.h).
  // NOT_SUPPORTED unless the link serves it (RpcMasterLink does).
  virtual Status ReportAccesses(const msg::AccessReport& report);

  // Replica operations (msg/ops_messages.h). NOT_SUPPORTED unless the link
  // serves them (RpcMasterLink does).
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

// The link over the master RPC protocol.
std::unique_ptr<MasterLink> RpcMasterLink(std::unique_ptr<rpc::MasterClient> client);

}  // namespace mc::client
