// GhostFilter: remembers recently evicted keys by hash in about 20 bits a
// key (TinyLFU's "doorkeeper"), where a list of exact ghosts costs 40 bytes
// or more. Two Bloom filters take turns: adds go to the current one, and
// once it holds `entries` keys the older one is cleared and becomes current,
// so a key is remembered for between one and two generations of adds. A
// false positive (about 1% at 10 bits and 4 hashes a key) only admits a new
// key as if it had been seen before. Deterministic; O(1) per call except the
// clear, O(bits) once per `entries` adds. Not thread-safe.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "eviction/table.h"

namespace mc::master::eviction {

class GhostFilter {
 public:
  static constexpr size_t kBitsPerEntry = 10;
  static constexpr size_t kHashes = 4;

  // Keys per generation; a change starts afresh (forgets every ghost).
  void Resize(size_t entries) {
    entries_ = std::max<size_t>(entries, 1);
    size_t bits = 64;
    while (bits < entries_ * kBitsPerEntry) bits *= 2;
    for (auto& f : filters_) f.assign(bits / 64, 0);
    mask_ = bits - 1;
    added_ = 0;
  }
  size_t entries() const { return entries_; }

  bool Contains(uint64_t key_hash) const {
    return In(filters_[0], key_hash) || In(filters_[1], key_hash);
  }

  void Add(uint64_t key_hash) {
    if (added_ == entries_) {
      current_ ^= 1;
      std::fill(filters_[current_].begin(), filters_[current_].end(), 0);
      added_ = 0;
    }
    uint64_t h = MixBits(key_hash);
    for (size_t i = 0; i < kHashes; ++i) {
      size_t bit = Bit(h, i);
      filters_[current_][bit / 64] |= uint64_t{1} << (bit % 64);
    }
    ++added_;
  }

  size_t memory_bytes() const {
    return (filters_[0].capacity() + filters_[1].capacity()) * sizeof(uint64_t);
  }

 private:
  // Double hashing from one 64-bit mix: h1 + i * h2.
  size_t Bit(uint64_t h, size_t i) const {
    return static_cast<size_t>((h + i * ((h >> 32) | 1)) & mask_);
  }
  bool In(const std::vector<uint64_t>& f, uint64_t key_hash) const {
    uint64_t h = MixBits(key_hash);
    for (size_t i = 0; i < kHashes; ++i) {
      size_t bit = Bit(h, i);
      if ((f[bit / 64] >> (bit % 64) & 1) == 0) return false;
    }
    return true;
  }

  std::array<std::vector<uint64_t>, 2> filters_;
  size_t entries_ = 0;
  size_t mask_ = 0;
  size_t added_ = 0;
  int current_ = 0;
};

}  // namespace mc::master::eviction
