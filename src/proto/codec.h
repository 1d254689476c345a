// Payload encoders and decoders for every master operation
// (mooncake-protocol(7) gives the byte layouts).
//
// Every request and reply type of messages.h lists its fields in wire order
// (T::Fields), and one generic Encode(Writer&, const T&) / Decode(Reader&,
// T*) pair walks that list: FieldWriter writes each field, FieldReader reads
// it back, so the two directions cannot disagree. Decoders are total: any
// byte string yields a value or a PROTOCOL_ERROR naming the field, within
// the limits below; the structures are of fixed depth (batch > replica >
// buffer), so nesting is bounded by the schema. Opcode<->type pairs are in
// OpTraits, made from the table in proto/ops.h. Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/ceilings.h"
#include "msg/messages.h"
#include "msg/ops_messages.h"
#include "msg/tier_messages.h"
#include "proto/byte_io.h"
#include "proto/frame.h"
#include "proto/ops.h"

namespace mc::proto {

// Wire limits (kMaxStringBytes, kMaxBatchItems, ...) live in
// common/ceilings.h, shared with the config that checks settings against them.
// Elements reserved before any is decoded.
inline constexpr size_t kReserveItems = 64;

// The payload of an operation that carries nothing (RemoveAll and
// ClusterStatus requests; replies of Mount/Unmount/PutEnd/PutRevoke/Remove).
struct Empty {
  template <typename S, typename F>
  static void Fields(S&, F&&) {}
};

// A type that lists its fields (msg/messages.h).
struct IgnoreFields {
  template <typename... A>
  void operator()(A&&...) const {}
};
template <typename T>
concept HasFields = requires(T& v) { T::Fields(v, IgnoreFields{}); };

// ---- the encoders and decoders ----------------------------------------------
// The wire forms that are not a field list.
void Encode(Writer& w, const bool& v);
void Decode(Reader& r, bool* v);
// i32 code, then the message (empty when OK; cut to kMaxMessageBytes).
void Encode(Writer& w, const Status& v);
void Decode(Reader& r, Status* v);

template <HasFields T>
void Encode(Writer& w, const T& v);
template <HasFields T>
void Decode(Reader& r, T* v);
// A batch: u32 count (at most kMaxBatchItems), then the elements.
template <typename T>
void Encode(Writer& w, const msg::Batch<T>& v);
template <typename T>
void Decode(Reader& r, msg::Batch<T>* v);
// A batch element: its Status, then the value only when that is OK.
template <typename T>
void Encode(Writer& w, const msg::BatchItem<T>& v);
template <typename T>
void Decode(Reader& r, msg::BatchItem<T>* v);

// Writes each field a Fields() list names.
struct FieldWriter {
  Writer& w;
  void operator()(const uint8_t& v, const char*) { w.U8(v); }
  void operator()(const uint32_t& v, const char*) { w.U32(v); }
  void operator()(const uint64_t& v, const char*) { w.U64(v); }
  void operator()(const bool& v, const char*) { w.Bool(v); }
  void operator()(const std::string& v, const char*) { w.Str(v); }
  void operator()(const msg::ReplicaStatus& v, const char*) { w.U8(static_cast<uint8_t>(v)); }
  template <typename T>
  void operator()(const T& v, const char*) {
    Encode(w, v);
  }
  // u32 count, then the elements.
  template <typename T>
  void operator()(const std::vector<T>& v, const char*, size_t, const char* element = "") {
    w.U32(static_cast<uint32_t>(v.size()));
    for (const T& e : v) (*this)(e, element);
  }
};

// Reads each field a Fields() list names; the first failure sticks in `r`.
struct FieldReader {
  Reader& r;
  void operator()(uint8_t& v, const char* name) { v = r.U8(name); }
  void operator()(uint32_t& v, const char* name) { v = r.U32(name); }
  void operator()(uint64_t& v, const char* name) { v = r.U64(name); }
  void operator()(bool& v, const char* name) { v = r.Bool(name); }
  void operator()(std::string& v, const char* name) { r.Str(&v, kMaxStringBytes, name); }
  void operator()(msg::ReplicaStatus& v, const char* name);
  template <typename T>
  void operator()(T& v, const char*) {
    Decode(r, &v);
  }
  // At most `max_items`, grown as elements decode, so a lying count costs
  // no memory up front.
  template <typename T>
  void operator()(std::vector<T>& v, const char* name, size_t max_items, const char* element = "") {
    const uint32_t n = r.Count(max_items, name);
    v.clear();
    v.reserve(n < kReserveItems ? n : kReserveItems);
    for (uint32_t i = 0; i < n && r.ok(); ++i) (*this)(v.emplace_back(), element);
  }
};

template <HasFields T>
void Encode(Writer& w, const T& v) {
  T::Fields(v, FieldWriter{w});
}
template <HasFields T>
void Decode(Reader& r, T* v) {
  T::Fields(*v, FieldReader{r});
}
template <typename T>
void Encode(Writer& w, const msg::Batch<T>& v) {
  FieldWriter{w}(v, "batch count", kMaxBatchItems);
}
template <typename T>
void Decode(Reader& r, msg::Batch<T>* v) {
  FieldReader{r}(*v, "batch count", kMaxBatchItems);
}
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

// ---- opcode <-> types -------------------------------------------------------
template <Opcode op>
struct OpTraits;
#define MC_PROTO_OP_TRAITS(name, value, Req, Rep, kind)                 \
  template <>                                                          \
  struct OpTraits<Opcode::k##name> {                                   \
    using Request = Req;                                               \
    using Reply = Rep;                                                 \
    static constexpr std::string_view kName = #name;                   \
    static constexpr bool kNotification = std::string_view(#kind) == "Notify"; \
  };
MC_MASTER_OPS(MC_PROTO_OP_TRAITS)
#undef MC_PROTO_OP_TRAITS

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
