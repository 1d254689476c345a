// Handlers for tests and benchmarks that answer only a few operations.
// Header-only; thread-safe as far as the overrides are.
#pragma once

#include "rpc/handler.h"

namespace mc::rpc::testing {

// Refuses every operation with NOT_SUPPORTED (what an older master answers
// for an operation it does not know); override the ones a test serves.
class RefusingHandler : public Handler {
 public:
#define MC_RPC_REFUSE(name, value, Req, Rep, kind)                                             \
  Answer<proto::Opcode::k##name> name(const RequestOf<proto::Opcode::k##name>&) override {     \
    return Error(ErrorCode::NOT_SUPPORTED, #name " is not supported by this server");          \
  }
  MC_MASTER_OPS(MC_RPC_REFUSE)
#undef MC_RPC_REFUSE
};

// Batch forms answered element by element by the single forms, and
// RemoveAllEx without force by RemoveAll: a test overrides singles only.
class ElementwiseHandler : public RefusingHandler {
 public:
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& req) override {
    return EachItem(req, [&](const auto& r) { return PutStart(r); });
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& req) override {
    return BatchPutStart(WithoutEx(req));
  }
  Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) override {
    return EachItem(req, [&](const auto& r) { return PutEnd(r); });
  }
  Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req) override {
    return EachItem(req, [&](const auto& r) { return PutRevoke(r); });
  }
  Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& req) override {
    return EachItem(req, [&](const auto& r) { return GetReplicaList(r); });
  }
  Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req) override {
    return EachItem(req, [&](const auto& r) { return ExistKey(r); });
  }
  Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& req) override {
    return EachItem(req, [&](const auto& r) { return Remove(r); });
  }
  Result<msg::RemoveAllReply> RemoveAllEx(const msg::RemoveAllRequest& req) override {
    if (req.force) return Error(ErrorCode::NOT_SUPPORTED, "RemoveAllEx with force is not supported");
    return RemoveAll(proto::Empty{});
  }
};

}  // namespace mc::rpc::testing
