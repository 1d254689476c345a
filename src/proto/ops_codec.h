// Codecs of the replica operations' messages (msg/ops_messages.h): one
// generic Encode / Decode per type, walking its Fields() list, so the two
// directions cannot disagree. Byte layouts in mooncake-protocol(7).
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <vector>

#include "msg/ops_messages.h"
#include "proto/codec.h"

namespace mc::proto {

#define MC_PROTO_OPS_TYPES(X)                                                       \
  X(msg::TaskId) X(msg::CreateCopyTaskRequest) X(msg::CreateMoveTaskRequest)         \
  X(msg::TaskRequest) X(msg::TaskInfo) X(msg::TaskStartReply) X(msg::TaskEndRequest) \
  X(msg::ReplicaClearRequest) X(msg::ReplicaClearReply) X(msg::RemoveByRegexRequest) \
  X(msg::RemoveByRegexReply)

// Declared before the visitors, which find them by ordinary lookup.
#define MC_PROTO_OPS_DECLARE(T) \
  void Encode(Writer& w, const T& v); \
  void Decode(Reader& r, T* v);
MC_PROTO_OPS_TYPES(MC_PROTO_OPS_DECLARE)
#undef MC_PROTO_OPS_DECLARE

namespace ops_detail {
struct Writes {
  Writer& w;
  void operator()(const uint8_t& v, const char*) { w.U8(v); }
  void operator()(const uint64_t& v, const char*) { w.U64(v); }
  void operator()(const bool& v, const char*) { w.Bool(v); }
  void operator()(const std::string& v, const char*) { w.Str(v); }
  template <typename T>
  void operator()(const T& v, const char*) {
    Encode(w, v);
  }
  template <typename T>
  void operator()(const std::vector<T>& v, const char*, size_t, const char* = "") {
    w.U32(static_cast<uint32_t>(v.size()));
    for (const T& e : v) (*this)(e, "");
  }
};
struct Reads {
  Reader& r;
  void operator()(uint8_t& v, const char* name) { v = r.U8(name); }
  void operator()(uint64_t& v, const char* name) { v = r.U64(name); }
  void operator()(bool& v, const char* name) { v = r.Bool(name); }
  void operator()(std::string& v, const char* name) { r.Str(&v, kMaxStringBytes, name); }
  template <typename T>
  void operator()(T& v, const char*) {
    Decode(r, &v);
  }
  template <typename T>
  void operator()(std::vector<T>& v, const char* name, size_t max_items,
                  const char* element = "") {
    const uint32_t n = r.Count(max_items, name);
    v.clear();
    v.reserve(n < kReserveItems ? n : kReserveItems);
    for (uint32_t i = 0; i < n && r.ok(); ++i) (*this)(v.emplace_back(), element);
  }
};
}  // namespace ops_detail

#define MC_PROTO_OPS_CODEC(T)                                                        \
  inline void Encode(Writer& w, const T& v) { T::Fields(v, ops_detail::Writes{w}); } \
  inline void Decode(Reader& r, T* v) { T::Fields(*v, ops_detail::Reads{r}); }
MC_PROTO_OPS_TYPES(MC_PROTO_OPS_CODEC)
#undef MC_PROTO_OPS_CODEC
#undef MC_PROTO_OPS_TYPES

#define MC_PROTO_OPS_OP(name, Req, Rep) \
  template <>                           \
  struct OpTraits<Opcode::k##name> {    \
    using Request = Req;                \
    using Reply = Rep;                  \
  };
MC_PROTO_OPS_OP(BatchUpsertStart, msg::Batch<msg::PutStartExRequest>,
                msg::Batch<msg::BatchItem<msg::PutStartReply>>)
MC_PROTO_OPS_OP(CreateCopyTask, msg::CreateCopyTaskRequest, msg::TaskId)
MC_PROTO_OPS_OP(CreateMoveTask, msg::CreateMoveTaskRequest, msg::TaskId)
MC_PROTO_OPS_OP(QueryTask, msg::TaskRequest, msg::TaskInfo)
MC_PROTO_OPS_OP(TaskStart, msg::TaskRequest, msg::TaskStartReply)
MC_PROTO_OPS_OP(TaskEnd, msg::TaskEndRequest, Empty)
MC_PROTO_OPS_OP(BatchReplicaClear, msg::ReplicaClearRequest, msg::ReplicaClearReply)
MC_PROTO_OPS_OP(RemoveByRegex, msg::RemoveByRegexRequest, msg::RemoveByRegexReply)
#undef MC_PROTO_OPS_OP

}  // namespace mc::proto
