// The rows of the master's journal (journal.cc writes them, journal_load.cc
// reads them back): the buffer record, the row checks and SQLite column
// helpers. Internal to masterd.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "master/state_listener.h"
#include "storage/sqlite_db.h"

namespace mc::masterd::journal_rows {

// One buffer in objects.buffers: u32 segment id, u64 offset (little endian).
constexpr size_t kBufferRecordBytes = 12;
// A check over a row's fields, so a damaged row (a flipped bit in an offset
// would point at another object's bytes) is refused at load, not served.
// SQLite checks its pages' structure, not the values in them.
//
// Rows are written with WordCheck. Files of mooncake before it hold rows
// checked with FnvCheck (FNV-1a a byte at a time: a 40-byte key's row is
// ~90 dependent multiplies, an eighth of a 50M-object start's CPU), and are
// never rewritten for it: a row loads if its check is either function's.
// Two 64-bit functions instead of one let a damaged row through with odds
// of 2^-63 instead of 2^-64.
class FnvCheck {
 public:
  FnvCheck& Bytes(std::string_view b) {
    U64(b.size());
    for (unsigned char c : b) h_ = (h_ ^ c) * kPrime;
    return *this;
  }
  FnvCheck& U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) h_ = (h_ ^ ((v >> (8 * i)) & 0xff)) * kPrime;
    return *this;
  }
  int64_t value() const { return static_cast<int64_t>(h_); }

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// 8 bytes a step (little-endian words; a field's length first, its last
// word zero-padded). Each step, h = mix((h ^ w) * K), is one-to-one in h
// for a given word and in the word for a given h, so a change confined to
// one word of a row always changes the check, as FNV-1a's does for one byte.
class WordCheck {
 public:
  WordCheck& Bytes(std::string_view b) {
    U64(b.size());
    size_t i = 0;
    for (; i + 8 <= b.size(); i += 8) U64(LoadLe(b.data() + i, 8));
    if (i < b.size()) U64(LoadLe(b.data() + i, b.size() - i));
    return *this;
  }
  WordCheck& U64(uint64_t w) {
    h_ = (h_ ^ w) * kMul;
    h_ ^= h_ >> 32;
    return *this;
  }
  int64_t value() const {
    uint64_t h = h_ * kFinal;  // every input bit reaches the high bits too
    h ^= h >> 29;
    return static_cast<int64_t>(h);
  }

 private:
  static uint64_t LoadLe(const char* p, size_t n) {
    uint64_t w = 0;
    for (size_t i = 0; i < n; ++i) w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    return w;
  }
  static constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  static constexpr uint64_t kFinal = 0xff51afd7ed558ccdull;
  uint64_t h_ = 0x6a09e667f3bcc909ull;
};

template <typename Check>
inline int64_t SegmentCheckWith(uint32_t id, const master::SegmentDump& s) {
  const msg::SegmentDesc& d = s.desc;
  return Check()
      .U64(id).Bytes(d.name).U64(s.owner.hi).U64(s.owner.lo).U64(d.incarnation)
      .U64(d.size_bytes).Bytes(d.hostname).Bytes(d.endpoint).Bytes(d.shm_path)
      .Bytes(d.access_key).value();
}

template <typename Check>
inline int64_t ObjectCheckWith(std::string_view key, uint64_t size, bool pin, uint64_t replicas,
                        std::string_view buffers) {
  return Check().Bytes(key).U64(size).U64(pin).U64(replicas).Bytes(buffers).value();
}

// What rows are written with.
inline int64_t SegmentCheck(uint32_t id, const master::SegmentDump& s) {
  return SegmentCheckWith<WordCheck>(id, s);
}
inline int64_t ObjectCheck(std::string_view key, uint64_t size, bool pin, uint64_t replicas,
                    std::string_view buffers) {
  return ObjectCheckWith<WordCheck>(key, size, pin, replicas, buffers);
}

// What rows load with: either function. `fnv_first` is which one the last
// row matched (a file's rows are mostly of one age), updated.
inline bool SegmentCheckMatches(int64_t stored, uint32_t id, const master::SegmentDump& s) {
  return stored == SegmentCheckWith<WordCheck>(id, s) || stored == SegmentCheckWith<FnvCheck>(id, s);
}
inline bool ObjectCheckMatches(int64_t stored, std::string_view key, uint64_t size, bool pin,
                        uint64_t replicas, std::string_view buffers, bool* fnv_first) {
  auto word = [&] { return stored == ObjectCheckWith<WordCheck>(key, size, pin, replicas, buffers); };
  auto fnv = [&] { return stored == ObjectCheckWith<FnvCheck>(key, size, pin, replicas, buffers); };
  if (*fnv_first ? fnv() : word()) return true;
  if (*fnv_first ? word() : fnv()) {
    *fnv_first = !*fnv_first;
    return true;
  }
  return false;
}

inline int64_t AsI64(uint64_t v) { return static_cast<int64_t>(v); }
inline uint64_t AsU64(sqlite3_stmt* s, int col) { return static_cast<uint64_t>(sqlite3_column_int64(s, col)); }
inline std::string Text(sqlite3_stmt* s, int col) { return storage::SqliteDb::Column(s, col); }
// A column's bytes in place: valid until the statement steps again.
inline std::string_view View(sqlite3_stmt* s, int col) {
  const void* p = sqlite3_column_blob(s, col);
  const int n = sqlite3_column_bytes(s, col);
  return p == nullptr ? std::string_view() : std::string_view(static_cast<const char*>(p), static_cast<size_t>(n));
}

}  // namespace mc::masterd::journal_rows
