// Test helpers for the message vocabulary: field-by-field equality and
// random values. For tests only (header-only); not thread-safe per Rng.
#pragma once

#include <cstdlib>
#include <random>
#include <string>

#include "common/test_seed.h"
#include "proto/codec.h"

namespace mc::proto {

inline bool SameStatus(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}
inline bool operator==(const Empty&, const Empty&) { return true; }

}  // namespace mc::proto

// Field-by-field equality of the vocabulary, for tests. In the types' own
// namespace, so argument-dependent lookup finds it (std::vector's ==).
namespace mc::msg {

#define MC_EQ(T, expr)                                          \
  inline bool operator==(const T& a, const T& b) { return expr; } \
  inline bool operator!=(const T& a, const T& b) { return !(a == b); }
MC_EQ(msg::SegmentDesc, a.name == b.name && a.hostname == b.hostname && a.endpoint == b.endpoint &&
                       a.shm_path == b.shm_path && a.size_bytes == b.size_bytes &&
                       a.incarnation == b.incarnation && a.access_key == b.access_key)
MC_EQ(msg::BufferDesc, a.segment_name == b.segment_name && a.endpoint == b.endpoint &&
                      a.shm_path == b.shm_path && a.hostname == b.hostname &&
                      a.offset == b.offset && a.size_bytes == b.size_bytes &&
                      a.capability == b.capability &&
                      a.capability_expiry_unix_ms == b.capability_expiry_unix_ms &&
                      a.sealed_capability == b.sealed_capability &&
                      a.sealed_capability_expiry_unix_ms == b.sealed_capability_expiry_unix_ms &&
                      a.capability_term == b.capability_term)
MC_EQ(msg::ReplicaDesc, a.status == b.status && a.buffers == b.buffers)
MC_EQ(msg::PutOptions, a.replicas == b.replicas && a.soft_pin == b.soft_pin)
MC_EQ(msg::MountSegmentRequest, a.client == b.client && a.segment == b.segment)
MC_EQ(msg::UnmountSegmentRequest, a.client == b.client && a.segment_name == b.segment_name)
MC_EQ(msg::PingRequest, a.client == b.client)
MC_EQ(msg::PingReply,
      a.remount == b.remount && a.view_version == b.view_version && a.term == b.term)
MC_EQ(msg::PutStartRequest, a.client == b.client && a.key == b.key &&
                                a.size_bytes == b.size_bytes && a.options == b.options)
MC_EQ(msg::PutStartReply, a.replicas == b.replicas)
MC_EQ(msg::PutPlacement, a.preferred_segments == b.preferred_segments &&
                            a.preferred_host == b.preferred_host &&
                            a.soft_pin_ttl_ms == b.soft_pin_ttl_ms && a.hard_pin == b.hard_pin)
MC_EQ(msg::PutStartExRequest, a.start == b.start && a.start.options.placement == b.start.options.placement)
MC_EQ(msg::KeyRequest, a.client == b.client && a.key == b.key)
MC_EQ(msg::TransferCount,
      a.path == b.path && a.dir == b.dir && a.ops == b.ops && a.bytes == b.bytes)
MC_EQ(msg::TransferReport, a.client == b.client && a.counts == b.counts)
MC_EQ(msg::GetReplicaListReply, a.replicas == b.replicas && a.size_bytes == b.size_bytes &&
                               a.lease_ttl_us == b.lease_ttl_us &&
                               a.generation == b.generation)
MC_EQ(msg::KeyAccess, a.key == b.key && a.count == b.count)
MC_EQ(msg::AccessReport, a.client == b.client && a.accesses == b.accesses)
MC_EQ(msg::RemoveRequest, a.key == b.key && a.force == b.force)
MC_EQ(msg::RemoveAllRequest, a.force == b.force)
MC_EQ(msg::RemoveAllReply, a.removed == b.removed)
MC_EQ(msg::ListKeysRequest, a.prefix == b.prefix && a.limit == b.limit && a.cursor == b.cursor)
MC_EQ(msg::KeyInfo, a.key == b.key && a.size_bytes == b.size_bytes && a.replicas == b.replicas &&
                   a.soft_pinned == b.soft_pinned)
MC_EQ(msg::ListKeysReply, a.keys == b.keys && a.next_cursor == b.next_cursor)
MC_EQ(msg::SegmentStatus, a.name == b.name && a.endpoint == b.endpoint &&
                         a.size_bytes == b.size_bytes && a.used_bytes == b.used_bytes)
MC_EQ(msg::ClusterStatusReply, a.capacity_bytes == b.capacity_bytes &&
                                   a.used_bytes == b.used_bytes && a.key_count == b.key_count &&
                                   a.soft_pinned_count == b.soft_pinned_count &&
                                   a.active_clients == b.active_clients && a.segments == b.segments)
// msg/ops_messages.h (TaskId has its own ==).
MC_EQ(msg::CreateCopyTaskRequest, a.client == b.client && a.key == b.key && a.targets == b.targets)
MC_EQ(msg::CreateMoveTaskRequest, a.client == b.client && a.key == b.key &&
                                      a.source == b.source && a.target == b.target)
MC_EQ(msg::TaskRequest, a.client == b.client && a.task == b.task)
MC_EQ(msg::TaskInfo, a.id == b.id && a.type == b.type && a.status == b.status &&
                         a.created_unix_ms == b.created_unix_ms &&
                         a.updated_unix_ms == b.updated_unix_ms &&
                         a.assigned_client == b.assigned_client && a.message == b.message &&
                         a.key == b.key)
MC_EQ(msg::TaskStartReply, a.key == b.key && a.size_bytes == b.size_bytes &&
                               a.lease_ttl_us == b.lease_ttl_us && a.source == b.source &&
                               a.targets == b.targets)
MC_EQ(msg::TaskEndRequest, a.client == b.client && a.task == b.task && a.ok == b.ok &&
                               a.message == b.message)
MC_EQ(msg::ReplicaClearRequest, a.client == b.client && a.keys == b.keys &&
                                    a.segment_name == b.segment_name)
MC_EQ(msg::ReplicaClearReply, a.cleared == b.cleared)
MC_EQ(msg::RemoveByRegexRequest, a.pattern == b.pattern && a.force == b.force)
MC_EQ(msg::RemoveByRegexReply, a.removed == b.removed)
// msg/tier_messages.h (the rest have their own ==).
MC_EQ(msg::TierResult, a.ticket == b.ticket && proto::SameStatus(a.status, b.status))
MC_EQ(msg::TierFetchRequest, a.client == b.client && a.segment_name == b.segment_name &&
                                 a.used_bytes == b.used_bytes &&
                                 a.capacity_bytes == b.capacity_bytes && a.results == b.results)
MC_EQ(msg::TierPollRequest, a.fetch == b.fetch && a.max_wait_ms == b.max_wait_ms)
MC_EQ(msg::TieredListKeysReply, a.list == b.list && a.tiers == b.tiers)
#undef MC_EQ
template <typename T>
bool operator==(const msg::BatchItem<T>& a, const msg::BatchItem<T>& b) {
  return proto::SameStatus(a.status, b.status) && (!a.status.ok() || a.value == b.value);
}

}  // namespace mc::msg

namespace mc::proto {

inline bool SameStatuses(const msg::Batch<Status>& a, const msg::Batch<Status>& b) {
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
  msg::ClientId Client() { return {U64(), U64()}; }
  msg::SegmentDesc Segment() { return {Str(), Str(), Str(), Str(), U64(), U64(), Str()}; }
  msg::BufferDesc Buffer() { return {Str(), Str(), Str(), Str(), U64(), U64(), Str(), U64()}; }
  msg::ReplicaDesc Replica() {
    msg::ReplicaDesc r;
    r.status = Bool() ? msg::ReplicaStatus::kComplete : msg::ReplicaStatus::kProcessing;
    for (size_t i = Pick(4); i > 0; --i) r.buffers.push_back(Buffer());
    return r;
  }
  std::vector<msg::ReplicaDesc> Replicas() {
    std::vector<msg::ReplicaDesc> v;
    for (size_t i = Pick(4); i > 0; --i) v.push_back(Replica());
    return v;
  }
  msg::PutStartRequest PutStart() { return {Client(), Str(), U64(), {U32(), Bool()}}; }
  msg::KeyRequest Key() { return {Client(), Str()}; }
  msg::RemoveRequest Remove() { return {Str(), Bool()}; }
  msg::GetReplicaListReply GetReplicas() { return {Replicas(), U64(), U64()}; }
  msg::ListKeysReply ListKeys() {
    msg::ListKeysReply r;
    for (size_t i = Pick(6); i > 0; --i) r.keys.push_back({Str(), U64(), U32(), Bool()});
    r.next_cursor = Str();
    return r;
  }
  msg::ClusterStatusReply Cluster() {
    msg::ClusterStatusReply r{U64(), U64(), U64(), U64(), U64(), {}};
    for (size_t i = Pick(5); i > 0; --i) r.segments.push_back({Str(), Str(), U64(), U64()});
    return r;
  }
  // Any value of any wire type, its fields drawn through their Fields() list.
  template <typename T>
  void Fill(T* v) {
    Filler{*this}(*v, "");
  }

  template <typename F>
  auto BatchOf(F make) {
    msg::Batch<decltype(make())> v;
    for (size_t i = Pick(8); i > 0; --i) v.push_back(make());
    return v;
  }
  template <typename T, typename F>
  msg::Batch<msg::BatchItem<T>> ItemsOf(F make) {
    msg::Batch<msg::BatchItem<T>> v;
    for (size_t i = Pick(8); i > 0; --i) {
      msg::BatchItem<T> item{St(), T{}};
      if (item.status.ok()) item.value = make();
      v.push_back(std::move(item));
    }
    return v;
  }

 private:
  struct Filler {
    RandomMessages& g;
    void operator()(uint8_t& v, const char*) { v = static_cast<uint8_t>(g.Pick(256)); }
    void operator()(uint32_t& v, const char*) { v = g.U32(); }
    void operator()(uint64_t& v, const char*) { v = g.U64(); }
    void operator()(bool& v, const char*) { v = g.Bool(); }
    void operator()(std::string& v, const char*) { v = g.Str(); }
    void operator()(Status& v, const char*) { v = g.St(); }
    void operator()(msg::ReplicaStatus& v, const char*) {
      v = g.Bool() ? msg::ReplicaStatus::kComplete : msg::ReplicaStatus::kProcessing;
    }
    template <HasFields T>
    void operator()(T& v, const char*) {
      T::Fields(v, *this);
    }
    template <typename T>
    void operator()(msg::BatchItem<T>& v, const char*) {
      (*this)(v.status, "");
      if (v.status.ok()) (*this)(v.value, "");
    }
    template <typename T>
    void operator()(std::vector<T>& v, const char* = "", size_t max_items = 8, const char* = "") {
      v.clear();
      for (size_t i = g.Pick(max_items < 5 ? max_items + 1 : 5); i > 0; --i) (*this)(v.emplace_back(), "");
    }
  };

  std::mt19937_64 rng_;
};

}  // namespace mc::proto
