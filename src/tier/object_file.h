// The disk tier's object file format (version 1), one file per object.
//
// A file is a header, padded with zeros to a multiple of kBlockBytes, then
// the object's bytes, padded with zeros to a multiple of kBlockBytes (so
// both parts are written and read with O_DIRECT). All integers little-endian:
//   0  u32 magic "MCSO"          4  u16 version (1)   6  u16 flags (0)
//   8  u64 size_bytes            16 u64 generation (the store's sequence
//                                       number of the write, newest wins)
//   24 u32 data_crc (CRC-32C of the size_bytes object bytes)
//   28 u32 key_bytes             32 u32 header_crc (CRC-32C of bytes 0..32
//                                       followed by the key)
//   36 key (key_bytes bytes)
// A file is readable only when both checksums verify: a torn or flipped
// write is refused, never served. Files are written under a temporary name
// and renamed into place once complete, so a crash mid-write leaves at most
// a temporary file, which the next start deletes. Pure functions:
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc::tier {

inline constexpr uint32_t kObjectMagic = 0x4f53434d;  // "MCSO"
inline constexpr uint16_t kObjectVersion = 1;
inline constexpr size_t kBlockBytes = 4096;           // O_DIRECT alignment
inline constexpr size_t kFixedHeaderBytes = 36;
inline constexpr size_t kMaxObjectKeyBytes = 64u << 10;

inline constexpr uint64_t AlignToBlock(uint64_t n) {
  return (n + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
}

struct ObjectHeader {
  std::string key;
  uint64_t size_bytes = 0;
  uint64_t generation = 0;
  uint32_t data_crc = 0;
  // Where the object's bytes start in the file.
  uint64_t data_offset() const { return AlignToBlock(kFixedHeaderBytes + key.size()); }
  // The whole file: header and data, each padded.
  uint64_t file_bytes() const { return data_offset() + AlignToBlock(size_bytes); }
};

// Writes the header into out[0..h.data_offset()) (zero padded); `out` must
// hold that many bytes.
void EncodeHeader(const ObjectHeader& h, uint8_t* out);
// Decodes a header from the first `size` bytes of a file. INVALID_PARAMS
// when `size` is too short for the key it names; CHECKSUM_MISMATCH for a
// bad magic, version or header checksum (the file is not ours or is torn).
Result<ObjectHeader> DecodeHeader(const uint8_t* in, size_t size);

}  // namespace mc::tier
