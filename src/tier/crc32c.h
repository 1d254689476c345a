// CRC-32C (Castagnoli), the checksum of every object file of the disk tier.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (about 1 byte per
// cycle per stream, three streams interleaved) and a table otherwise; both
// give the same value. Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mc::tier {

// Extends `crc` (0 to start) over `size` bytes at `data`.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);
// The software table alone (tests hold the fast path to it).
uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t size);

}  // namespace mc::tier
