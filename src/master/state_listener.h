// StateListener: the seam through which the master's durable state changes
// are journaled (masterd::Journal, in SQLite) and replayed.
//
// Durable state is the mounted segments and the complete objects with the
// exact location of every buffer; in-flight puts, leases and liveness are
// not durable (after a restart clients retry puts and re-ping). The master
// state machine calls the listener synchronously, inside the operation that
// made the change, after the change is applied. Calls arrive in the order the
// changes happen, so replaying them into MasterState::Load* rebuilds the same
// state. Not thread-safe: called under the master's lock; must not call back
// into the MasterState.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "msg/messages.h"

namespace mc::master {

// Where one buffer of a replica lives.
struct BufferLocation {
  std::string segment_name;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  // A loader that resolved the name once per segment (the journal: 50M
  // objects' buffers) may give the state's id of the segment instead
  // (MasterState::SegmentIdOf) and leave the name empty.
  static constexpr uint32_t kByName = UINT32_MAX;
  uint32_t segment_id = kByName;
};

// The durable (or, for dumps, the full) record of one object.
struct ObjectDump {
  std::string key;
  uint64_t size_bytes = 0;
  bool complete = false;
  bool soft_pin = false;
  // Replicas, each its buffers in object order.
  std::vector<std::vector<BufferLocation>> replicas;
  // The listener's own handle for the object's durable record, as its last
  // OnObjectCommitted returned it (0: none yet). The state keeps it with the
  // object and hands it back, so a journal can find the record without an
  // index of its own.
  uint64_t listener_tag = 0;
  // std::hash of `key`, when a loader computed it on a thread of its own
  // (the journal's reader): the state then does not hash the key again.
  std::optional<uint64_t> key_hash;
};

struct SegmentDump {
  msg::SegmentDesc desc;
  msg::ClientId owner;
};

enum class RemoveReason : uint8_t {
  kRemoved = 1,      // Remove / RemoveAll
  kEvicted = 2,      // eviction chose it
  kReplicasLost = 3, // its last replica's segment was unmounted or its owner died
};

class StateListener {
 public:
  virtual ~StateListener() = default;
  virtual void OnSegmentMounted(const SegmentDump& segment) = 0;
  virtual void OnSegmentUnmounted(std::string_view segment_name) = 0;
  // An object became complete, or lost some replicas and kept others: its
  // durable record is now `object` (an upsert; object.listener_tag is the
  // handle returned for it before, 0 the first time). Returns the handle to
  // keep with the object.
  virtual uint64_t OnObjectCommitted(const ObjectDump& object) = 0;
  // `listener_tag`: the handle the object's last OnObjectCommitted returned.
  virtual void OnObjectRemoved(std::string_view key, uint64_t listener_tag,
                               RemoveReason reason) = 0;
};

}  // namespace mc::master
