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

#include "proto/frame.h"
#include "proto/messages.h"
#include "proto/wire.h"

namespace mc::proto {

// Wire limits: a decoder refuses anything larger. The master applies its
// own, smaller, configured limits (max_batch, max_key_bytes) on top.
inline constexpr size_t kMaxStringBytes = 64u << 10;    // keys, names, paths, cursors
inline constexpr size_t kMaxMessageBytes = 4096;        // error messages (encoder truncates)
inline constexpr size_t kMaxBatchItems = 65536;         // batch elements, listed keys
inline constexpr size_t kMaxReplicas = 256;             // replicas of one object
inline constexpr size_t kMaxBuffersPerReplica = 65536;  // stripes of one replica
inline constexpr size_t kMaxSegments = 65536;           // segments in ClusterStatus
// Elements reserved before any is decoded.
inline constexpr size_t kReserveItems = 64;

// The payload of an operation that carries nothing (RemoveAll and
// ClusterStatus requests; replies of Mount/Unmount/PutEnd/PutRevoke/Remove).
struct Empty {};

template <typename T>
using Batch = std::vector<T>;

// ---- one overload pair per type --------------------------------------------
#define MC_PROTO_CODEC(T)                 \
  void Encode(Writer& w, const T& v);     \
  void Decode(Reader& r, T* v);
MC_PROTO_CODEC(Empty)
MC_PROTO_CODEC(bool)
MC_PROTO_CODEC(Status)
MC_PROTO_CODEC(ClientId)
MC_PROTO_CODEC(SegmentDesc)
MC_PROTO_CODEC(BufferDesc)
MC_PROTO_CODEC(ReplicaDesc)
MC_PROTO_CODEC(PutOptions)
MC_PROTO_CODEC(MountSegmentRequest)
MC_PROTO_CODEC(UnmountSegmentRequest)
MC_PROTO_CODEC(PingRequest)
MC_PROTO_CODEC(PingReply)
MC_PROTO_CODEC(PutStartRequest)
MC_PROTO_CODEC(PutStartReply)
MC_PROTO_CODEC(PutPlacement)
MC_PROTO_CODEC(PutStartExRequest)
MC_PROTO_CODEC(KeyRequest)
MC_PROTO_CODEC(GetReplicaListReply)
MC_PROTO_CODEC(RemoveRequest)
MC_PROTO_CODEC(RemoveAllReply)
MC_PROTO_CODEC(ListKeysRequest)
MC_PROTO_CODEC(KeyInfo)
MC_PROTO_CODEC(ListKeysReply)
MC_PROTO_CODEC(SegmentStatus)
MC_PROTO_CODEC(ClusterStatusReply)
#undef MC_PROTO_CODEC

template <typename T>
void Encode(Writer& w, const BatchItem<T>& v) {
  Encode(w, v.status);
  if (v.status.ok()) Encode(w, v.value);
}
template <typename T>
void Decode(Reader& r, BatchItem<T>* v) {
  Decode(r, &v->status);
  if (r.ok() && v->status.ok()) Decode(r, &v->value);
}
// A batch: u32 count (at most kMaxBatchItems), then the elements.
template <typename T>
void Encode(Writer& w, const Batch<T>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const T& e : v) Encode(w, e);
}
template <typename T>
void Decode(Reader& r, Batch<T>* v) {
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
MC_PROTO_OP(MountSegment, MountSegmentRequest, Empty)
MC_PROTO_OP(UnmountSegment, UnmountSegmentRequest, Empty)
MC_PROTO_OP(Ping, PingRequest, PingReply)
MC_PROTO_OP(PutStart, PutStartRequest, PutStartReply)
MC_PROTO_OP(PutEnd, KeyRequest, Empty)
MC_PROTO_OP(PutRevoke, KeyRequest, Empty)
MC_PROTO_OP(GetReplicaList, KeyRequest, GetReplicaListReply)
MC_PROTO_OP(ExistKey, KeyRequest, bool)
MC_PROTO_OP(Remove, RemoveRequest, Empty)
MC_PROTO_OP(RemoveAll, Empty, RemoveAllReply)
MC_PROTO_OP(ListKeys, ListKeysRequest, ListKeysReply)
MC_PROTO_OP(ClusterStatus, Empty, ClusterStatusReply)
MC_PROTO_OP(BatchPutStart, Batch<PutStartRequest>, Batch<BatchItem<PutStartReply>>)
MC_PROTO_OP(BatchPutEnd, Batch<KeyRequest>, Batch<Status>)
MC_PROTO_OP(BatchPutRevoke, Batch<KeyRequest>, Batch<Status>)
MC_PROTO_OP(BatchGetReplicaList, Batch<KeyRequest>, Batch<BatchItem<GetReplicaListReply>>)
MC_PROTO_OP(BatchExistKey, Batch<KeyRequest>, Batch<BatchItem<bool>>)
MC_PROTO_OP(BatchRemove, Batch<RemoveRequest>, Batch<Status>)
MC_PROTO_OP(ReleaseLeases, Batch<KeyRequest>, Empty)  // a notification: no reply is sent
MC_PROTO_OP(BatchPutStartEx, Batch<PutStartExRequest>, Batch<BatchItem<PutStartReply>>)
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
