#include "rpc/handler.h"

#include <cstdio>

namespace mc::rpc {

using namespace mc::proto;  // this layer speaks the wire format (a .cc, not a header)

namespace {
Status Unsupported(std::string_view op) {
  return Error(ErrorCode::NOT_SUPPORTED, std::string(op) + " is not supported by this server");
}

template <typename Rep, typename Req, typename F>
Result<msg::Batch<Rep>> EachItem(const msg::Batch<Req>& reqs, F one) {
  msg::Batch<Rep> out;
  out.reserve(reqs.size());
  for (const Req& r : reqs) out.push_back(one(r));
  return out;
}

template <typename T>
msg::BatchItem<T> ToItem(Result<T> r) {
  if (!r.ok()) return msg::BatchItem<T>{r.status(), T{}};
  return msg::BatchItem<T>{Status::Ok(), std::move(r).value()};
}

// Adapts a Status-returning handler method to the Result<Empty> shape of
// the reply encoder.
Result<Empty> AsResult(Status s) {
  if (!s.ok()) return s;
  return Empty{};
}
template <typename T>
Result<T> AsResult(Result<T> r) {
  return r;
}

template <Opcode op, typename F>
void Serve(std::string_view payload, std::string* out, F call) {
  using Req = typename OpTraits<op>::Request;
  Req req{};
  Status st = DecodePayload(payload, &req, OpcodeName(op));
  if (!st.ok()) return EncodeErrorReply(st, out);
  EncodeReply(AsResult(call(req)), out);
}
}  // namespace

Status Handler::MountSegment(const msg::MountSegmentRequest&) {
  return Unsupported("MountSegment");
}
Status Handler::UnmountSegment(const msg::UnmountSegmentRequest&) {
  return Unsupported("UnmountSegment");
}
Result<msg::PingReply> Handler::Ping(const msg::PingRequest&) { return Unsupported("Ping"); }
Result<msg::PutStartReply> Handler::PutStart(const msg::PutStartRequest&) {
  return Unsupported("PutStart");
}
Status Handler::PutEnd(const msg::KeyRequest&) { return Unsupported("PutEnd"); }
Status Handler::PutRevoke(const msg::KeyRequest&) { return Unsupported("PutRevoke"); }
Result<msg::GetReplicaListReply> Handler::GetReplicaList(const msg::KeyRequest&) {
  return Unsupported("GetReplicaList");
}
Result<bool> Handler::ExistKey(const msg::KeyRequest&) { return Unsupported("ExistKey"); }
Status Handler::Remove(const msg::RemoveRequest&) { return Unsupported("Remove"); }
Result<msg::RemoveAllReply> Handler::RemoveAll() { return Unsupported("RemoveAll"); }
Result<msg::RemoveAllReply> Handler::RemoveAllEx(const msg::RemoveAllRequest& req) {
  if (req.force) return Unsupported("RemoveAllEx with force");
  return RemoveAll();
}
Result<msg::ListKeysReply> Handler::ListKeys(const msg::ListKeysRequest&) {
  return Unsupported("ListKeys");
}
Result<msg::ClusterStatusReply> Handler::ClusterStatus() { return Unsupported("ClusterStatus"); }

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> Handler::BatchPutStart(
    const msg::Batch<msg::PutStartRequest>& req) {
  return EachItem<msg::BatchItem<msg::PutStartReply>>(
      req, [&](const auto& r) { return ToItem(PutStart(r)); });
}
Result<msg::Batch<Status>> Handler::BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) {
  return EachItem<Status>(req, [&](const auto& r) { return PutEnd(r); });
}
Result<msg::Batch<Status>> Handler::BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req) {
  return EachItem<Status>(req, [&](const auto& r) { return PutRevoke(r); });
}
Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> Handler::BatchGetReplicaList(
    const msg::Batch<msg::KeyRequest>& req) {
  return EachItem<msg::BatchItem<msg::GetReplicaListReply>>(
      req, [&](const auto& r) { return ToItem(GetReplicaList(r)); });
}
Result<msg::Batch<msg::BatchItem<bool>>> Handler::BatchExistKey(
    const msg::Batch<msg::KeyRequest>& req) {
  return EachItem<msg::BatchItem<bool>>(req, [&](const auto& r) { return ToItem(ExistKey(r)); });
}
Result<msg::Batch<Status>> Handler::BatchRemove(const msg::Batch<msg::RemoveRequest>& req) {
  return EachItem<Status>(req, [&](const auto& r) { return Remove(r); });
}

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> Handler::BatchPutStartEx(
    const msg::Batch<msg::PutStartExRequest>& req) {
  msg::Batch<msg::PutStartRequest> plain;
  plain.reserve(req.size());
  for (const auto& r : req) plain.push_back(r.start);
  return BatchPutStart(plain);
}

Status Handler::ReportTransfers(const msg::TransferReport&) {
  return Unsupported("ReportTransfers");
}
Status Handler::ReleaseLeases(const msg::Batch<msg::KeyRequest>&) {
  return Unsupported("ReleaseLeases");
}

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> Handler::BatchUpsertStart(
    const msg::Batch<msg::PutStartExRequest>&) {
  return Unsupported("BatchUpsertStart");
}
Result<msg::TaskId> Handler::CreateCopyTask(const msg::CreateCopyTaskRequest&) {
  return Unsupported("CreateCopyTask");
}
Result<msg::TaskId> Handler::CreateMoveTask(const msg::CreateMoveTaskRequest&) {
  return Unsupported("CreateMoveTask");
}
Result<msg::TaskInfo> Handler::QueryTask(const msg::TaskRequest&) {
  return Unsupported("QueryTask");
}
Result<msg::TaskStartReply> Handler::TaskStart(const msg::TaskRequest&) {
  return Unsupported("TaskStart");
}
Status Handler::TaskEnd(const msg::TaskEndRequest&) { return Unsupported("TaskEnd"); }
Result<msg::ReplicaClearReply> Handler::BatchReplicaClear(const msg::ReplicaClearRequest&) {
  return Unsupported("BatchReplicaClear");
}
Result<msg::RemoveByRegexReply> Handler::RemoveByRegex(const msg::RemoveByRegexRequest&) {
  return Unsupported("RemoveByRegex");
}

void Dispatch(Handler& h, Opcode op, std::string_view payload, std::string* out) {
#define MC_SERVE(name, call) \
  case Opcode::k##name:      \
    return Serve<Opcode::k##name>(payload, out, [&](const auto& req) { return call; });
  switch (op) {
    MC_SERVE(MountSegment, h.MountSegment(req))
    MC_SERVE(UnmountSegment, h.UnmountSegment(req))
    MC_SERVE(Ping, h.Ping(req))
    MC_SERVE(PutStart, h.PutStart(req))
    MC_SERVE(PutEnd, h.PutEnd(req))
    MC_SERVE(PutRevoke, h.PutRevoke(req))
    MC_SERVE(GetReplicaList, h.GetReplicaList(req))
    MC_SERVE(ExistKey, h.ExistKey(req))
    MC_SERVE(Remove, h.Remove(req))
    MC_SERVE(RemoveAll, ((void)req, h.RemoveAll()))
    MC_SERVE(ListKeys, h.ListKeys(req))
    MC_SERVE(ClusterStatus, ((void)req, h.ClusterStatus()))
    MC_SERVE(BatchPutStart, h.BatchPutStart(req))
    MC_SERVE(BatchPutEnd, h.BatchPutEnd(req))
    MC_SERVE(BatchPutRevoke, h.BatchPutRevoke(req))
    MC_SERVE(BatchGetReplicaList, h.BatchGetReplicaList(req))
    MC_SERVE(BatchExistKey, h.BatchExistKey(req))
    MC_SERVE(BatchRemove, h.BatchRemove(req))
    MC_SERVE(ReleaseLeases, h.ReleaseLeases(req))
    MC_SERVE(BatchPutStartEx, h.BatchPutStartEx(req))
    MC_SERVE(RemoveAllEx, h.RemoveAllEx(req))
    MC_SERVE(ReportTransfers, h.ReportTransfers(req))
    MC_SERVE(BatchUpsertStart, h.BatchUpsertStart(req))
    MC_SERVE(CreateCopyTask, h.CreateCopyTask(req))
    MC_SERVE(CreateMoveTask, h.CreateMoveTask(req))
    MC_SERVE(QueryTask, h.QueryTask(req))
    MC_SERVE(TaskStart, h.TaskStart(req))
    MC_SERVE(TaskEnd, h.TaskEnd(req))
    MC_SERVE(BatchReplicaClear, h.BatchReplicaClear(req))
    MC_SERVE(RemoveByRegex, h.RemoveByRegex(req))
    case Opcode::kConnectionError:
    case Opcode::kHello:
    case Opcode::kAuth:
      return EncodeErrorReply(
          Error(ErrorCode::PROTOCOL_ERROR,
                std::string(OpcodeName(op)) + " is only valid at the start of a connection"),
          out);
  }
#undef MC_SERVE
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%04x", static_cast<unsigned>(op));
  EncodeErrorReply(Error(ErrorCode::NOT_SUPPORTED, std::string("unknown opcode ") + hex), out);
}

}  // namespace mc::rpc
