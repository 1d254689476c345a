// Helpers shared by the master state machine's tests. Not thread-safe.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "eviction/testing_policy.h"
#include "master/master_state.h"

namespace mc::master::testing {

// Records what the state machine reported as durable changes.
struct RecordingListener : StateListener {
  std::vector<std::string> mounted, unmounted, committed, evicted, removed, lost;
  void OnSegmentMounted(const SegmentDump& s) override { mounted.push_back(s.desc.name); }
  void OnSegmentUnmounted(std::string_view n) override { unmounted.emplace_back(n); }
  uint64_t OnObjectCommitted(const ObjectDump& o) override {
    committed.push_back(o.key);
    return 0;
  }
  void OnObjectRemoved(std::string_view key, uint64_t, RemoveReason why) override {
    auto& to = why == RemoveReason::kEvicted ? evicted
               : why == RemoveReason::kRemoved ? removed : lost;
    to.emplace_back(key);
  }
};

inline msg::ClientId Client(uint64_t n) { return msg::ClientId{n, n}; }

inline msg::SegmentDesc Segment(const std::string& name, uint64_t size_bytes) {
  return msg::SegmentDesc{name, "host-" + name, "10.0.0.1:" + name, "", size_bytes, 1};
}

// A MasterState with a manual clock (`now_us`) and an exact LRU policy.
struct Harness {
  Options config;
  RecordingListener listener;
  std::unique_ptr<MasterState> state;
  uint64_t now_us = 1000000;
  std::set<uint64_t> live = {1};

  explicit Harness(Options c = {}) : config(c) {
    state = std::make_unique<MasterState>(config, std::make_unique<ExactLruPolicy>(), &listener);
  }
  // Whatever a test did, the state it leaves holds every invariant.
  ~Harness() {
    if (state != nullptr) {
      const Status invariants = state->CheckInvariants();
      CHECK_MESSAGE(invariants.ok(), invariants.message());
    }
  }
  Status Mount(uint64_t client, const std::string& name, uint64_t size_bytes) {
    return state->MountSegment({Client(client), Segment(name, size_bytes)}, now_us);
  }
  Result<msg::PutStartReply> Start(const std::string& key, uint64_t size_bytes,
                                     uint32_t replicas = 1, bool pin = false) {
    return state->PutStart({Client(1), key, size_bytes, {replicas, pin}}, now_us);
  }
  Status End(const std::string& key) { return state->PutEnd({Client(1), key}, now_us); }
  Status Put(const std::string& key, uint64_t size_bytes, uint32_t replicas = 1,
             bool pin = false) {
    auto r = Start(key, size_bytes, replicas, pin);
    if (!r.ok()) return r.status();
    return End(key);
  }
  Result<msg::GetReplicaListReply> Get(const std::string& key) {
    return state->GetReplicaList({Client(1), key}, now_us);
  }
  bool Exists(const std::string& key) { return state->ExistKey({Client(1), key}, now_us).value(); }
  void Ping(uint64_t client) { (void)state->Ping({Client(client)}, now_us); }
  // Moves time on; the clients in `live` ping at the new time, the others
  // fall silent (and die once client_ttl passes).
  void Advance(uint64_t us) {
    now_us += us;
    for (uint64_t c : live) Ping(c);
  }
  TickReport Tick() { return state->Tick(now_us); }
};

inline std::set<std::string> SegmentsOf(const msg::ReplicaDesc& r) {
  std::set<std::string> out;
  for (const auto& b : r.buffers) out.insert(b.segment_name);
  return out;
}

}  // namespace mc::master::testing
