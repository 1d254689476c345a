#include "proto/codec.h"

namespace mc::proto {

namespace {
template <typename T>
void DecodeVector(Reader& r, std::vector<T>* v, size_t max_items, const char* field) {
  uint32_t n = r.Count(max_items, field);
  v->clear();
  // Grow as elements decode, so a lying count costs no memory up front.
  v->reserve(n < kReserveItems ? n : kReserveItems);
  for (uint32_t i = 0; i < n && r.ok(); ++i) Decode(r, &v->emplace_back());
}
template <typename T>
void EncodeVector(Writer& w, const std::vector<T>& v) {
  w.U32(static_cast<uint32_t>(v.size()));
  for (const T& e : v) Encode(w, e);
}
}  // namespace

void Encode(Writer&, const Empty&) {}
void Decode(Reader&, Empty*) {}

void Encode(Writer& w, const bool& v) { w.Bool(v); }
void Decode(Reader& r, bool* v) { *v = r.Bool("bool"); }

void Encode(Writer& w, const Status& v) {
  w.I32(static_cast<int32_t>(v.code()));
  std::string_view m = v.ok() ? std::string_view() : std::string_view(v.message());
  w.Str(m.substr(0, kMaxMessageBytes));
}
void Decode(Reader& r, Status* v) {
  int32_t code = r.I32("status code");
  std::string msg;
  r.Str(&msg, kMaxMessageBytes, "status message");
  if (!r.ok()) return;
  // Unknown codes are kept as they are: a newer peer may add codes, and any
  // non-zero code is an error to an older one.
  *v = code == 0 ? Status() : Status(static_cast<ErrorCode>(code), std::move(msg));
}

void Encode(Writer& w, const msg::ClientId& v) {
  w.U64(v.hi);
  w.U64(v.lo);
}
void Decode(Reader& r, msg::ClientId* v) {
  v->hi = r.U64("client.hi");
  v->lo = r.U64("client.lo");
}

void Encode(Writer& w, const msg::SegmentDesc& v) {
  w.Str(v.name);
  w.Str(v.hostname);
  w.Str(v.endpoint);
  w.Str(v.shm_path);
  w.U64(v.size_bytes);
  w.U64(v.incarnation);
  w.Str(v.access_key);
}
void Decode(Reader& r, msg::SegmentDesc* v) {
  r.Str(&v->name, kMaxStringBytes, "segment.name");
  r.Str(&v->hostname, kMaxStringBytes, "segment.hostname");
  r.Str(&v->endpoint, kMaxStringBytes, "segment.endpoint");
  r.Str(&v->shm_path, kMaxStringBytes, "segment.shm_path");
  v->size_bytes = r.U64("segment.size_bytes");
  v->incarnation = r.U64("segment.incarnation");
  r.Str(&v->access_key, kMaxStringBytes, "segment.access_key");
}

void Encode(Writer& w, const msg::BufferDesc& v) {
  w.Str(v.segment_name);
  w.Str(v.endpoint);
  w.Str(v.shm_path);
  w.Str(v.hostname);
  w.U64(v.offset);
  w.U64(v.size_bytes);
  w.Str(v.capability);
  w.U64(v.capability_expiry_unix_ms);
}
void Decode(Reader& r, msg::BufferDesc* v) {
  r.Str(&v->segment_name, kMaxStringBytes, "buffer.segment_name");
  r.Str(&v->endpoint, kMaxStringBytes, "buffer.endpoint");
  r.Str(&v->shm_path, kMaxStringBytes, "buffer.shm_path");
  r.Str(&v->hostname, kMaxStringBytes, "buffer.hostname");
  v->offset = r.U64("buffer.offset");
  v->size_bytes = r.U64("buffer.size_bytes");
  r.Str(&v->capability, kMaxStringBytes, "buffer.capability");
  v->capability_expiry_unix_ms = r.U64("buffer.capability_expiry_unix_ms");
}

void Encode(Writer& w, const msg::ReplicaDesc& v) {
  w.U8(static_cast<uint8_t>(v.status));
  EncodeVector(w, v.buffers);
}
void Decode(Reader& r, msg::ReplicaDesc* v) {
  uint8_t s = r.U8("replica.status");
  if (r.ok() && s != static_cast<uint8_t>(msg::ReplicaStatus::kProcessing) &&
      s != static_cast<uint8_t>(msg::ReplicaStatus::kComplete)) {
    return r.Fail("replica.status", "unknown replica status");
  }
  v->status = static_cast<msg::ReplicaStatus>(s);
  DecodeVector(r, &v->buffers, kMaxBuffersPerReplica, "replica.buffers count");
}

void Encode(Writer& w, const msg::PutOptions& v) {
  w.U32(v.replicas);
  w.Bool(v.soft_pin);
}
void Decode(Reader& r, msg::PutOptions* v) {
  v->replicas = r.U32("options.replicas");
  v->soft_pin = r.Bool("options.soft_pin");
}

void Encode(Writer& w, const msg::MountSegmentRequest& v) {
  Encode(w, v.client);
  Encode(w, v.segment);
}
void Decode(Reader& r, msg::MountSegmentRequest* v) {
  Decode(r, &v->client);
  Decode(r, &v->segment);
}

void Encode(Writer& w, const msg::UnmountSegmentRequest& v) {
  Encode(w, v.client);
  w.Str(v.segment_name);
}
void Decode(Reader& r, msg::UnmountSegmentRequest* v) {
  Decode(r, &v->client);
  r.Str(&v->segment_name, kMaxStringBytes, "segment_name");
}

void Encode(Writer& w, const msg::PingRequest& v) { Encode(w, v.client); }
void Decode(Reader& r, msg::PingRequest* v) { Decode(r, &v->client); }

void Encode(Writer& w, const msg::PingReply& v) {
  w.Bool(v.remount);
  w.U64(v.view_version);
}
void Decode(Reader& r, msg::PingReply* v) {
  v->remount = r.Bool("remount");
  v->view_version = r.U64("view_version");
}

void Encode(Writer& w, const msg::PutStartRequest& v) {
  Encode(w, v.client);
  w.Str(v.key);
  w.U64(v.size_bytes);
  Encode(w, v.options);
}
void Decode(Reader& r, msg::PutStartRequest* v) {
  Decode(r, &v->client);
  r.Str(&v->key, kMaxStringBytes, "key");
  v->size_bytes = r.U64("size_bytes");
  Decode(r, &v->options);
}

void Encode(Writer& w, const msg::PutPlacement& v) {
  w.U32(static_cast<uint32_t>(v.preferred_segments.size()));
  for (const auto& s : v.preferred_segments) w.Str(s);
  w.Str(v.preferred_host);
  w.U64(v.soft_pin_ttl_ms);
  w.Bool(v.hard_pin);
}
void Decode(Reader& r, msg::PutPlacement* v) {
  const uint32_t n = r.Count(kMaxWireReplicas, "placement.preferred_segments count");
  v->preferred_segments.clear();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    r.Str(&v->preferred_segments.emplace_back(), kMaxStringBytes, "placement.preferred_segment");
  }
  r.Str(&v->preferred_host, kMaxStringBytes, "placement.preferred_host");
  v->soft_pin_ttl_ms = r.U64("placement.soft_pin_ttl_ms");
  v->hard_pin = r.Bool("placement.hard_pin");
}

void Encode(Writer& w, const msg::PutStartExRequest& v) {
  Encode(w, v.start);
  Encode(w, v.start.options.placement);
}
void Decode(Reader& r, msg::PutStartExRequest* v) {
  Decode(r, &v->start);
  Decode(r, &v->start.options.placement);
}

void Encode(Writer& w, const msg::PutStartReply& v) { EncodeVector(w, v.replicas); }
void Decode(Reader& r, msg::PutStartReply* v) {
  DecodeVector(r, &v->replicas, kMaxWireReplicas, "replicas count");
}

void Encode(Writer& w, const msg::TransferCount& v) {
  w.U8(v.path);
  w.U8(v.dir);
  w.U64(v.ops);
  w.U64(v.bytes);
}
void Decode(Reader& r, msg::TransferCount* v) {
  v->path = r.U8("transfer.path");
  v->dir = r.U8("transfer.dir");
  v->ops = r.U64("transfer.ops");
  v->bytes = r.U64("transfer.bytes");
}

void Encode(Writer& w, const msg::TransferReport& v) {
  Encode(w, v.client);
  EncodeVector(w, v.counts);
}
void Decode(Reader& r, msg::TransferReport* v) {
  Decode(r, &v->client);
  DecodeVector(r, &v->counts, msg::kMaxTransferCounts, "transfer counts count");
}

void Encode(Writer& w, const msg::KeyRequest& v) {
  Encode(w, v.client);
  w.Str(v.key);
}
void Decode(Reader& r, msg::KeyRequest* v) {
  Decode(r, &v->client);
  r.Str(&v->key, kMaxStringBytes, "key");
}

void Encode(Writer& w, const msg::GetReplicaListReply& v) {
  EncodeVector(w, v.replicas);
  w.U64(v.size_bytes);
  w.U64(v.lease_ttl_us);
}
void Decode(Reader& r, msg::GetReplicaListReply* v) {
  DecodeVector(r, &v->replicas, kMaxWireReplicas, "replicas count");
  v->size_bytes = r.U64("size_bytes");
  v->lease_ttl_us = r.U64("lease_ttl_us");
}

void Encode(Writer& w, const msg::RemoveRequest& v) {
  w.Str(v.key);
  w.Bool(v.force);
}
void Decode(Reader& r, msg::RemoveRequest* v) {
  r.Str(&v->key, kMaxStringBytes, "key");
  v->force = r.Bool("force");
}

void Encode(Writer& w, const msg::RemoveAllRequest& v) { w.Bool(v.force); }
void Decode(Reader& r, msg::RemoveAllRequest* v) { v->force = r.Bool("force"); }

void Encode(Writer& w, const msg::RemoveAllReply& v) { w.U64(v.removed); }
void Decode(Reader& r, msg::RemoveAllReply* v) { v->removed = r.U64("removed"); }

void Encode(Writer& w, const msg::ListKeysRequest& v) {
  w.Str(v.prefix);
  w.U32(v.limit);
  w.Str(v.cursor);
}
void Decode(Reader& r, msg::ListKeysRequest* v) {
  r.Str(&v->prefix, kMaxStringBytes, "prefix");
  v->limit = r.U32("limit");
  r.Str(&v->cursor, kMaxStringBytes, "cursor");
}

void Encode(Writer& w, const msg::KeyInfo& v) {
  w.Str(v.key);
  w.U64(v.size_bytes);
  w.U32(v.replicas);
  w.Bool(v.soft_pinned);
}
void Decode(Reader& r, msg::KeyInfo* v) {
  r.Str(&v->key, kMaxStringBytes, "key");
  v->size_bytes = r.U64("size_bytes");
  v->replicas = r.U32("replicas");
  v->soft_pinned = r.Bool("soft_pinned");
}

void Encode(Writer& w, const msg::ListKeysReply& v) {
  EncodeVector(w, v.keys);
  w.Str(v.next_cursor);
}
void Decode(Reader& r, msg::ListKeysReply* v) {
  DecodeVector(r, &v->keys, kMaxBatchItems, "keys count");
  r.Str(&v->next_cursor, kMaxStringBytes, "next_cursor");
}

void Encode(Writer& w, const msg::SegmentStatus& v) {
  w.Str(v.name);
  w.Str(v.endpoint);
  w.U64(v.size_bytes);
  w.U64(v.used_bytes);
}
void Decode(Reader& r, msg::SegmentStatus* v) {
  r.Str(&v->name, kMaxStringBytes, "segment.name");
  r.Str(&v->endpoint, kMaxStringBytes, "segment.endpoint");
  v->size_bytes = r.U64("segment.size_bytes");
  v->used_bytes = r.U64("segment.used_bytes");
}

void Encode(Writer& w, const msg::ClusterStatusReply& v) {
  w.U64(v.capacity_bytes);
  w.U64(v.used_bytes);
  w.U64(v.key_count);
  w.U64(v.soft_pinned_count);
  w.U64(v.active_clients);
  EncodeVector(w, v.segments);
}
void Decode(Reader& r, msg::ClusterStatusReply* v) {
  v->capacity_bytes = r.U64("capacity_bytes");
  v->used_bytes = r.U64("used_bytes");
  v->key_count = r.U64("key_count");
  v->soft_pinned_count = r.U64("soft_pinned_count");
  v->active_clients = r.U64("active_clients");
  DecodeVector(r, &v->segments, kMaxListedSegments, "segments count");
}

void EncodeErrorReply(const Status& status, std::string* out) {
  Writer w(out);
  Encode(w, status);
}

}  // namespace mc::proto
