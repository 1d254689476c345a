// ObjectRecord: the master's compact per-object record (internal to the
// master state machine). 40 bytes, the index node's header included, plus,
// for objects with more than one buffer or a pin, one heap array of 8 bytes
// per buffer and 8 for the pin's expiry.
//
// A buffer is packed into 64 bits: the segment id (24 bits, segment ids are
// reused so this bounds the number of mounted segments) and offset / 64
// (40 bits: segments up to 64 TiB). Buffer sizes are not stored: a replica
// is cut into stripes of `stripe_size_bytes` (the last one shorter), so the
// size of buffer i of a replica follows from the object size. Buffers are
// kept replica-major: replica r's stripes are [r * stripes, (r+1) * stripes).
// Not thread-safe.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>

#include "master/segment_allocator.h"

namespace mc::master {

constexpr uint32_t kSegmentIdBits = 24;
// What a packed buffer can address: segment ids and bytes within one segment.
constexpr uint32_t kMaxSegmentIds = 1u << kSegmentIdBits;
constexpr uint64_t kMaxAddressableSegmentBytes = (1ull << 40) * SegmentAllocator::kAlignmentBytes;

inline uint64_t PackBuffer(uint32_t segment_id, uint64_t offset) {
  assert(segment_id < kMaxSegmentIds && offset % SegmentAllocator::kAlignmentBytes == 0);
  return (offset / SegmentAllocator::kAlignmentBytes) << kSegmentIdBits | segment_id;
}
inline uint32_t BufferSegment(uint64_t packed) { return packed & (kMaxSegmentIds - 1); }
inline uint64_t BufferOffset(uint64_t packed) {
  return (packed >> kSegmentIdBits) * SegmentAllocator::kAlignmentBytes;
}

class ObjectRecord {
 public:
  static constexpr uint8_t kComplete = 1;    // PutEnd done: readable
  static constexpr uint8_t kSoftPin = 2;     // the put asked for a soft pin
  static constexpr uint8_t kPinCounted = 4;  // pin live: counted, in the pin heap

  ObjectRecord() { buf_.one = 0; }
  ~ObjectRecord() { Free(); }
  ObjectRecord(const ObjectRecord&) = delete;
  ObjectRecord& operator=(const ObjectRecord&) = delete;

  // Object sizes the record holds (a put of a larger one is refused).
  static constexpr uint64_t kMaxSizeBytes = (1ull << 48) - 1;

  // Replaces the buffers with `count` packed buffers (count may be 0),
  // keeping the pin expiry.
  void SetBuffers(const uint64_t* packed, uint32_t count) {
    assert(count <= UINT16_MAX);
    const uint64_t pin = pin_expiry_us();
    Free();
    buffer_count = count;
    Store(packed, count, pin);
  }
  const uint64_t* buffers() const { return on_heap() ? buf_.many : &buf_.one; }

  // Complete and soft-pinned: pin expiry (kHardPin: pinned for good, never
  // evicted). In flight: the pin TTL the put asked for (0: the default).
  // 0 otherwise. Most objects are not pinned, so the value is kept after the
  // buffers in their heap array, which only a pinned object then needs.
  static constexpr uint64_t kHardPin = UINT64_MAX;
  uint64_t pin_expiry_us() const { return pin_stored_ ? buf_.many[buffer_count] : 0; }
  void set_pin_expiry_us(uint64_t us) {
    if (pin_stored_ && us != 0) {
      buf_.many[buffer_count] = us;
      return;
    }
    if (!pin_stored_ && us == 0) return;
    uint64_t* old = on_heap() ? buf_.many : nullptr;
    const uint64_t one = buf_.one;
    pin_stored_ = 0;
    Store(old != nullptr ? old : &one, buffer_count, us);
    delete[] old;
  }

  bool complete() const { return flags & kComplete; }
  bool has(uint8_t flag) const { return flags & flag; }

  // Complete: reads (GetReplicaList) of the current lease not released yet,
  // in the spare bits of `flags`. kReadersUnknown: too many to count, so
  // the lease ends by time only.
  static constexpr uint8_t kReadersUnknown = 31;
  uint8_t readers() const { return flags >> kReaderShift; }
  void set_readers(uint8_t n) {
    flags = static_cast<uint8_t>((flags & kFlagBits) | (n << kReaderShift));
  }

  // The size and the buffer count share a word (sizes below 256 TiB), so
  // the tail word has room for the index's bits.
  uint64_t size_bytes : 48 = 0;
  uint64_t buffer_count : 16 = 0;
  // Complete: the lease expiry (0: never leased). In flight: the time after
  // which the put is discarded. Shared because an object is never both.
  uint64_t deadline_us = 0;
  uint64_t listener_tag = 0;   // complete: see ObjectDump::listener_tag
 private:
  static constexpr int kReaderShift = 3;
  static constexpr uint8_t kFlagBits = (1 << kReaderShift) - 1;
  bool on_heap() const { return buffer_count > 1 || pin_stored_; }
  // Fills the empty buffer storage: `count` buffers (buffer_count already
  // says so) and a pin expiry unless 0.
  void Store(const uint64_t* packed, uint32_t count, uint64_t pin) {
    pin_stored_ = pin != 0;
    if (on_heap()) {
      uint64_t* many = new uint64_t[count + pin_stored_];
      if (count > 0) std::memcpy(many, packed, count * sizeof(uint64_t));
      if (pin_stored_) many[count] = pin;
      buf_.many = many;
    } else {
      buf_.one = count == 1 ? packed[0] : 0;
    }
  }
  void Free() {
    if (on_heap()) delete[] buf_.many;
    buf_.one = 0;
    buffer_count = 0;
    pin_stored_ = 0;
  }
  union {
    uint64_t one;
    uint64_t* many;
  } buf_;

 public:
  uint8_t replicas : 7 = 0;  // at most kMaxReplicas
 private:
  uint8_t pin_stored_ : 1 = 0;  // buf_.many[buffer_count] is the pin expiry

 public:
  uint8_t flags = 0;
  // Owned by the ObjectIndex node holding the record (its levels and key
  // length), so the node needs no header of its own; 0 in a record outside
  // an index.
  uint16_t index_bits = 0;
  uint32_t slot = 0;  // index in the slot table; ObjectId = generation << 32 | slot
};

static_assert(sizeof(ObjectRecord) == 40, "keep the per-object record compact");

}  // namespace mc::master
