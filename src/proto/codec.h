// Payload encoders and decoders for every master operation
// (mooncake-protocol(7) gives the byte layouts).
//
// Each request and reply type of messages.h has Encode(Writer&, const T&)
// and Decode(Reader&, T*). Decoders are total: any byte string yields a
// value or a PROTOCOL_ERROR naming the field, within the limits below; the
// structures are of fixed depth (batch > replica > buffer), so nesting is
// bounded by the schema. Opcode<->type pairs are in OpTraits. Thread-safe
// (pure functions).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/ceilings.h"
#include "msg/messages.h"
#include "proto/byte_io.h"
#include "proto/frame.h"

namespace mc::proto {

// Wire limits (kMaxStringBytes, kMaxBatchItems, ...) live in
// common/ceilings.h, shared with the config that checks settings against them.
// Elements reserved before any is decoded.
inline constexpr size_t kReserveItems = 64;

// The payload of an operation that carries nothing (RemoveAll and
// ClusterStatus requests; replies of Mount/Unmount/PutEnd/PutRevoke/Remove).
struct Empty {};

// ---- one overload pair per type --------------------------------------------
#define MC_PROTO_CODEC(T)                 \
  void Encode(Writer& w, const T& v);     \
  void Decode(Reader& r, T* v);
MC_PROTO_CODEC(Empty)
MC_PROTO_CODEC(bool)
MC_PROTO_CODEC(Status)
MC_PROTO_CODEC(msg::ClientId)
MC_PROTO_CODEC(msg::SegmentDesc)
MC_PROTO_CODEC(msg::BufferDesc)
MC_PROTO_CODEC(msg::ReplicaDesc)
MC_PROTO_CODEC(msg::PutOptions)
MC_PROTO_CODEC(msg::MountSegmentRequest)
MC_PROTO_CODEC(msg::UnmountSegmentRequest)
MC_PROTO_CODEC(msg::PingRequest)
MC_PROTO_CODEC(msg::PingReply)
MC_PROTO_CODEC(msg::PutStartRequest)
MC_PROTO_CODEC(msg::PutStartReply)
MC_PROTO_CODEC(msg::PutPlacement)
MC_PROTO_CODEC(msg::PutStartExRequest)
MC_PROTO_CODEC(msg::KeyRequest)
MC_PROTO_CODEC(msg::GetReplicaListReply)
MC_PROTO_CODEC(msg::RemoveRequest)
MC_PROTO_CODEC(msg::RemoveAllRequest)
MC_PROTO_CODEC(msg::RemoveAllReply)
MC_PROTO_CODEC(msg::ListKeysRequest)
MC_PROTO_CODEC(msg::KeyInfo)
MC_PROTO_CODEC(msg::ListKeysReply)
MC_PROTO_CODEC(msg::SegmentStatus)
MC_PROTO_CODEC(msg::ClusterStatusReply)
MC_PROTO_CODEC(msg::TransferCount)
MC_PROTO_CODEC(msg::TransferReport)
#undef MC_PROTO_CODEC

template <typename T>
void Encode(Writer& w, const msg::BatchItem<T>& v) {
  Encode(w, v.status);
  if (v.status.ok()) Encode(w, v.value);
}
template <typename T>
void Decode(Reader& r, msg::BatchItem<T>* v) {
  Decode(r, &v->status);
  if (r.ok() && v->status.ok()) Decode(r, &v->value);
}
// A batch: u32 count (at most kMaxBatchItems), then the elements.
template <typename T>
void Encode(Writer& w, const msg::Batch<T>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const T& e : v) Encode(w, e);
}
template <typename T>
void Decode(Reader& r, msg::Batch<T>* v) {
  uint32_t n = r.Count(kMaxBatchItems, "batch count");
  v->clear();
  // Grow as elements decode, so a lying count costs no memory up front.
  v->reserve(n < kReserveItems ? n : kReserveItems);
  for (uint32_t i = 0; i < n && r.ok(); ++i) Decode(r, &v->emplace_back());
}

// ---- opcode <-> types -------------------------------------------------------
template <Opcode op>
struct OpTraits;
#define MC_PROTO_OP(name, Req, Rep)  \
  template <>                        \
  struct OpTraits<Opcode::k##name> { \
    using Request = Req;             \
    using Reply = Rep;               \
  };
MC_PROTO_OP(MountSegment, msg::MountSegmentRequest, Empty)
MC_PROTO_OP(UnmountSegment, msg::UnmountSegmentRequest, Empty)
MC_PROTO_OP(Ping, msg::PingRequest, msg::PingReply)
MC_PROTO_OP(PutStart, msg::PutStartRequest, msg::PutStartReply)
MC_PROTO_OP(PutEnd, msg::KeyRequest, Empty)
MC_PROTO_OP(PutRevoke, msg::KeyRequest, Empty)
MC_PROTO_OP(GetReplicaList, msg::KeyRequest, msg::GetReplicaListReply)
MC_PROTO_OP(ExistKey, msg::KeyRequest, bool)
MC_PROTO_OP(Remove, msg::RemoveRequest, Empty)
MC_PROTO_OP(RemoveAll, Empty, msg::RemoveAllReply)
MC_PROTO_OP(ListKeys, msg::ListKeysRequest, msg::ListKeysReply)
MC_PROTO_OP(ClusterStatus, Empty, msg::ClusterStatusReply)
MC_PROTO_OP(BatchPutStart, msg::Batch<msg::PutStartRequest>,
            msg::Batch<msg::BatchItem<msg::PutStartReply>>)
MC_PROTO_OP(BatchPutEnd, msg::Batch<msg::KeyRequest>, msg::Batch<Status>)
MC_PROTO_OP(BatchPutRevoke, msg::Batch<msg::KeyRequest>, msg::Batch<Status>)
MC_PROTO_OP(BatchGetReplicaList, msg::Batch<msg::KeyRequest>,
            msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>)
MC_PROTO_OP(BatchExistKey, msg::Batch<msg::KeyRequest>, msg::Batch<msg::BatchItem<bool>>)
MC_PROTO_OP(BatchRemove, msg::Batch<msg::RemoveRequest>, msg::Batch<Status>)
MC_PROTO_OP(ReleaseLeases, msg::Batch<msg::KeyRequest>, Empty)  // a notification: no reply is sent
MC_PROTO_OP(BatchPutStartEx, msg::Batch<msg::PutStartExRequest>,
            msg::Batch<msg::BatchItem<msg::PutStartReply>>)
MC_PROTO_OP(RemoveAllEx, msg::RemoveAllRequest, msg::RemoveAllReply)
MC_PROTO_OP(ReportTransfers, msg::TransferReport, Empty)  // a notification: no reply is sent
#undef MC_PROTO_OP

// ---- whole payloads ---------------------------------------------------------
template <typename T>
void EncodePayload(const T& v, std::string* out) {
  Writer w(out);
  Encode(w, v);
}

// Decodes a whole payload: trailing bytes are an error too.
template <typename T>
Status DecodePayload(std::string_view payload, T* out, std::string_view what) {
  Reader r(payload);
  Decode(r, out);
  return r.Finish(what);
}

// A reply payload is a Status (i32 code, message) followed by the body only
// when the code is OK.
template <typename T>
void EncodeReply(const Result<T>& result, std::string* out) {
  Writer w(out);
  if (!result.ok()) return Encode(w, result.status());
  Encode(w, Status::Ok());
  Encode(w, result.value());
}
void EncodeErrorReply(const Status& status, std::string* out);

template <typename T>
Result<T> DecodeReply(std::string_view payload, std::string_view what) {
  Reader r(payload);
  Status st;
  Decode(r, &st);
  if (r.ok() && !st.ok()) {
    MC_RETURN_IF_ERROR(r.Finish(what));
    return st;
  }
  T value{};
  Decode(r, &value);
  MC_RETURN_IF_ERROR(r.Finish(what));
  return value;
}

}  // namespace mc::proto
