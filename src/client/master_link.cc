// RpcMasterLink: MasterLink over rpc::MasterClient, one call each.
#include "client/master_link.h"

#include "rpc/client.h"

namespace mc::client {

namespace {

using proto::Opcode;

Status StatusOf(const Result<proto::Empty>& r) { return r.ok() ? Status::Ok() : r.status(); }

class RpcLink final : public MasterLink {
 public:
  explicit RpcLink(std::unique_ptr<rpc::MasterClient> client) : rpc_(std::move(client)) {}

  Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& req) override {
    return rpc_->Invoke<Opcode::kPutStart>(req);
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchPutStart>(req);
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchPutStartEx>(req);
  }
  Status PutEnd(const msg::KeyRequest& req) override {
    return StatusOf(rpc_->Invoke<Opcode::kPutEnd>(req));
  }
  Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchPutEnd>(req);
  }
  Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchPutRevoke>(req);
  }
  Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& req) override {
    return rpc_->Invoke<Opcode::kGetReplicaList>(req);
  }
  Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchGetReplicaList>(req);
  }
  void ReleaseLeasesSoon(const msg::Batch<msg::KeyRequest>& req) override {
    rpc_->ReleaseLeasesSoon(req);
  }
  Result<bool> ExistKey(const msg::KeyRequest& req) override {
    return rpc_->Invoke<Opcode::kExistKey>(req);
  }
  Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchExistKey>(req);
  }
  Status Remove(const msg::RemoveRequest& req) override {
    return StatusOf(rpc_->Invoke<Opcode::kRemove>(req));
  }
  Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchRemove>(req);
  }
  Result<msg::RemoveAllReply> RemoveAll(bool force) override {
    if (force) return rpc_->Invoke<Opcode::kRemoveAllEx>(msg::RemoveAllRequest{true});
    return rpc_->Invoke<Opcode::kRemoveAll>({});
  }
  Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& req) override {
    return rpc_->Invoke<Opcode::kListKeys>(req);
  }
  Result<msg::TieredListKeysReply> ListKeysTiered(const msg::ListKeysRequest& req) override {
    return rpc_->Invoke<Opcode::kListKeysTiered>(req);
  }
  Result<msg::ClusterStatusReply> ClusterStatus() override {
    return rpc_->Invoke<Opcode::kClusterStatus>({});
  }
  Status ReportTransfers(const msg::TransferReport& report) override {
    return StatusOf(rpc_->Invoke<Opcode::kReportTransfers>(report));
  }
  Status ReportAccesses(const msg::AccessReport& report) override {
    return StatusOf(rpc_->Invoke<Opcode::kReportAccesses>(report));
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchUpsertStart(
      const msg::Batch<msg::PutStartExRequest>& req) override {
    return rpc_->Invoke<Opcode::kBatchUpsertStart>(req);
  }
  Result<msg::TaskId> CreateCopyTask(const msg::CreateCopyTaskRequest& req) override {
    return rpc_->Invoke<Opcode::kCreateCopyTask>(req);
  }
  Result<msg::TaskId> CreateMoveTask(const msg::CreateMoveTaskRequest& req) override {
    return rpc_->Invoke<Opcode::kCreateMoveTask>(req);
  }
  Result<msg::TaskInfo> QueryTask(const msg::TaskRequest& req) override {
    return rpc_->Invoke<Opcode::kQueryTask>(req);
  }
  Result<msg::TaskStartReply> TaskStart(const msg::TaskRequest& req) override {
    return rpc_->Invoke<Opcode::kTaskStart>(req);
  }
  Status TaskEnd(const msg::TaskEndRequest& req) override {
    return StatusOf(rpc_->Invoke<Opcode::kTaskEnd>(req));
  }
  Result<msg::ReplicaClearReply> BatchReplicaClear(const msg::ReplicaClearRequest& req) override {
    return rpc_->Invoke<Opcode::kBatchReplicaClear>(req);
  }
  Result<msg::RemoveByRegexReply> RemoveByRegex(const msg::RemoveByRegexRequest& req) override {
    return rpc_->Invoke<Opcode::kRemoveByRegex>(req);
  }

 private:
  std::unique_ptr<rpc::MasterClient> rpc_;
};

}  // namespace

namespace {
Status Unsupported(const char* op) {
  return Error(ErrorCode::NOT_SUPPORTED, std::string(op) + " is not served by this master link");
}
}  // namespace

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> MasterLink::BatchUpsertStart(
    const msg::Batch<msg::PutStartExRequest>&) {
  return Unsupported("BatchUpsertStart");
}
Result<msg::TaskId> MasterLink::CreateCopyTask(const msg::CreateCopyTaskRequest&) {
  return Unsupported("CreateCopyTask");
}
Result<msg::TaskId> MasterLink::CreateMoveTask(const msg::CreateMoveTaskRequest&) {
  return Unsupported("CreateMoveTask");
}
Result<msg::TaskInfo> MasterLink::QueryTask(const msg::TaskRequest&) {
  return Unsupported("QueryTask");
}
Result<msg::TaskStartReply> MasterLink::TaskStart(const msg::TaskRequest&) {
  return Unsupported("TaskStart");
}
Status MasterLink::TaskEnd(const msg::TaskEndRequest&) { return Unsupported("TaskEnd"); }
Result<msg::ReplicaClearReply> MasterLink::BatchReplicaClear(const msg::ReplicaClearRequest&) {
  return Unsupported("BatchReplicaClear");
}
Result<msg::RemoveByRegexReply> MasterLink::RemoveByRegex(const msg::RemoveByRegexRequest&) {
  return Unsupported("RemoveByRegex");
}
Result<msg::TieredListKeysReply> MasterLink::ListKeysTiered(const msg::ListKeysRequest&) {
  return Unsupported("ListKeysTiered");
}
Status MasterLink::ReportAccesses(const msg::AccessReport&) {
  return Unsupported("ReportAccesses");
}

std::unique_ptr<MasterLink> RpcMasterLink(std::unique_ptr<rpc::MasterClient> client) {
  return std::make_unique<RpcLink>(std::move(client));
}

}  // namespace mc::client
