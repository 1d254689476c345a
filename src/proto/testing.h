// Test helpers for the message vocabulary: field-by-field equality and
// random values. For tests only (header-only); not thread-safe per Rng.
#pragma once

#include <cstdlib>
#include <random>
#include <string>

#include "proto/codec.h"
#include "common/test_seed.h"

namespace mc::proto {

inline bool SameStatus(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}
inline bool operator==(const Empty&, const Empty&) { return true; }
#define MC_EQ(T, expr)                                          \
  inline bool operator==(const T& a, const T& b) { return expr; } \
  inline bool operator!=(const T& a, const T& b) { return !(a == b); }
MC_EQ(SegmentDesc, a.name == b.name && a.hostname == b.hostname && a.endpoint == b.endpoint &&
                       a.shm_path == b.shm_path && a.size_bytes == b.size_bytes &&
                       a.incarnation == b.incarnation && a.access_key == b.access_key)
MC_EQ(BufferDesc, a.segment_name == b.segment_name && a.endpoint == b.endpoint &&
                      a.shm_path == b.shm_path && a.hostname == b.hostname &&
                      a.offset == b.offset && a.size_bytes == b.size_bytes &&
                      a.capability == b.capability &&
                      a.capability_expiry_unix_ms == b.capability_expiry_unix_ms)
MC_EQ(ReplicaDesc, a.status == b.status && a.buffers == b.buffers)
MC_EQ(PutOptions, a.replicas == b.replicas && a.soft_pin == b.soft_pin)
MC_EQ(MountSegmentRequest, a.client == b.client && a.segment == b.segment)
MC_EQ(UnmountSegmentRequest, a.client == b.client && a.segment_name == b.segment_name)
MC_EQ(PingRequest, a.client == b.client)
MC_EQ(PingReply, a.remount == b.remount && a.view_version == b.view_version)
MC_EQ(PutStartRequest, a.client == b.client && a.key == b.key && a.size_bytes == b.size_bytes &&
                           a.options == b.options)
MC_EQ(PutStartReply, a.replicas == b.replicas)
MC_EQ(KeyRequest, a.client == b.client && a.key == b.key)
MC_EQ(GetReplicaListReply, a.replicas == b.replicas && a.size_bytes == b.size_bytes &&
                               a.lease_ttl_us == b.lease_ttl_us)
MC_EQ(RemoveRequest, a.key == b.key && a.force == b.force)
MC_EQ(RemoveAllReply, a.removed == b.removed)
MC_EQ(ListKeysRequest, a.prefix == b.prefix && a.limit == b.limit && a.cursor == b.cursor)
MC_EQ(KeyInfo, a.key == b.key && a.size_bytes == b.size_bytes && a.replicas == b.replicas &&
                   a.soft_pinned == b.soft_pinned)
MC_EQ(ListKeysReply, a.keys == b.keys && a.next_cursor == b.next_cursor)
MC_EQ(SegmentStatus, a.name == b.name && a.endpoint == b.endpoint &&
                         a.size_bytes == b.size_bytes && a.used_bytes == b.used_bytes)
MC_EQ(ClusterStatusReply, a.capacity_bytes == b.capacity_bytes && a.used_bytes == b.used_bytes &&
                              a.key_count == b.key_count &&
                              a.soft_pinned_count == b.soft_pinned_count &&
                              a.active_clients == b.active_clients && a.segments == b.segments)
#undef MC_EQ
template <typename T>
bool operator==(const BatchItem<T>& a, const BatchItem<T>& b) {
  return SameStatus(a.status, b.status) && (!a.status.ok() || a.value == b.value);
}
inline bool SameStatuses(const Batch<Status>& a, const Batch<Status>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!SameStatus(a[i], b[i])) return false;
  return true;
}

// Random message values, with strings of any byte (including NUL and
// non-UTF-8) and sizes that exercise the length prefixes.
class RandomMessages {
 public:
  explicit RandomMessages(uint64_t seed) : rng_(seed) {}
  uint64_t U64() { return Pick(4) == 0 ? Pick(3) : rng_(); }
  uint32_t U32() { return static_cast<uint32_t>(U64()); }
  bool Bool() { return Pick(2) == 1; }
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string Str() {
    size_t n = Pick(8) == 0 ? Pick(300) : Pick(24);
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(Pick(256));
    return s;
  }
  Status St() {
    if (Bool()) return Status::Ok();
    return Status(static_cast<ErrorCode>(-1 - static_cast<int32_t>(Pick(1100))), Str());
  }
  ClientId Client() { return {U64(), U64()}; }
  SegmentDesc Segment() { return {Str(), Str(), Str(), Str(), U64(), U64(), Str()}; }
  BufferDesc Buffer() { return {Str(), Str(), Str(), Str(), U64(), U64(), Str(), U64()}; }
  ReplicaDesc Replica() {
    ReplicaDesc r;
    r.status = Bool() ? ReplicaStatus::kComplete : ReplicaStatus::kProcessing;
    for (size_t i = Pick(4); i > 0; --i) r.buffers.push_back(Buffer());
    return r;
  }
  std::vector<ReplicaDesc> Replicas() {
    std::vector<ReplicaDesc> v;
    for (size_t i = Pick(4); i > 0; --i) v.push_back(Replica());
    return v;
  }
  PutStartRequest PutStart() { return {Client(), Str(), U64(), {U32(), Bool()}}; }
  KeyRequest Key() { return {Client(), Str()}; }
  RemoveRequest Remove() { return {Str(), Bool()}; }
  GetReplicaListReply GetReplicas() { return {Replicas(), U64(), U64()}; }
  ListKeysReply ListKeys() {
    ListKeysReply r;
    for (size_t i = Pick(6); i > 0; --i) r.keys.push_back({Str(), U64(), U32(), Bool()});
    r.next_cursor = Str();
    return r;
  }
  ClusterStatusReply Cluster() {
    ClusterStatusReply r{U64(), U64(), U64(), U64(), U64(), {}};
    for (size_t i = Pick(5); i > 0; --i) r.segments.push_back({Str(), Str(), U64(), U64()});
    return r;
  }
  template <typename F>
  auto BatchOf(F make) {
    Batch<decltype(make())> v;
    for (size_t i = Pick(8); i > 0; --i) v.push_back(make());
    return v;
  }
  template <typename T, typename F>
  Batch<BatchItem<T>> ItemsOf(F make) {
    Batch<BatchItem<T>> v;
    for (size_t i = Pick(8); i > 0; --i) {
      BatchItem<T> item{St(), T{}};
      if (item.status.ok()) item.value = make();
      v.push_back(std::move(item));
    }
    return v;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace mc::proto
