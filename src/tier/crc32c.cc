#include "tier/crc32c.h"

#include <array>
#include <cstring>

namespace mc::tier {

namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // reflected Castagnoli

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t SoftwareCrc(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

// Appending n zero bytes to a CRC register is linear over GF(2): a 32x32
// bit matrix, applied here a byte of the register at a time from four
// tables. It joins the three streams below: crc(A|B) = shift_|B|(crc(A)) ^ crc(B)
// with B's register starting at 0.
struct ZeroShift {
  std::array<std::array<uint32_t, 256>, 4> table{};
  uint32_t operator()(uint32_t crc) const {
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
  }
};

using Matrix = std::array<uint32_t, 32>;  // column i: the image of bit i

uint32_t Apply(const Matrix& m, uint32_t v) {
  uint32_t out = 0;
  for (int i = 0; v != 0; ++i, v >>= 1)
    if (v & 1) out ^= m[i];
  return out;
}

Matrix Square(const Matrix& m) {
  Matrix out{};
  for (int i = 0; i < 32; ++i) out[i] = Apply(m, m[i]);
  return out;
}

ZeroShift MakeZeroShift(size_t zero_bytes) {
  Matrix op{};  // one zero bit: shift right, folding the polynomial in
  op[0] = kPolynomial;
  for (int i = 1; i < 32; ++i) op[i] = 1u << (i - 1);
  for (int i = 0; i < 3; ++i) op = Square(op);  // one zero byte
  Matrix result{};
  for (int i = 0; i < 32; ++i) result[i] = 1u << i;  // identity
  for (size_t n = zero_bytes; n != 0; n >>= 1, op = Square(op)) {
    if (n & 1) {
      Matrix next{};
      for (int i = 0; i < 32; ++i) next[i] = Apply(op, result[i]);
      result = next;
    }
  }
  ZeroShift z;
  for (uint32_t b = 0; b < 256; ++b)
    for (int k = 0; k < 4; ++k) z.table[k][b] = Apply(result, b << (8 * k));
  return z;
}

#if defined(__x86_64__)
// The crc32 instruction takes three cycles but starts one a cycle: three
// independent streams over adjacent blocks keep it busy, about three times
// one stream's speed (the disk tier checksums every byte it moves).
constexpr size_t kStreamBytes = 8192;
constexpr size_t kShortStreamBytes = 256;

__attribute__((target("sse4.2"))) uint64_t Stream(uint64_t c, const uint8_t* p, size_t n) {
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  return c;
}

template <size_t kBytes>
__attribute__((target("sse4.2"))) uint64_t ThreeStreams(uint64_t c0, const uint8_t*& p,
                                                        size_t& n, const ZeroShift& shift) {
  while (n >= 3 * kBytes) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBytes; i += 8) {
      uint64_t a, b, d;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kBytes + i, 8);
      std::memcpy(&d, p + 2 * kBytes + i, 8);
      c0 = __builtin_ia32_crc32di(c0, a);
      c1 = __builtin_ia32_crc32di(c1, b);
      c2 = __builtin_ia32_crc32di(c2, d);
    }
    c0 = shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 3 * kBytes;
    n -= 3 * kBytes;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t HardwareCrc(uint32_t crc, const uint8_t* p,
                                                       size_t n) {
  static const ZeroShift kLong = MakeZeroShift(kStreamBytes);
  static const ZeroShift kShort = MakeZeroShift(kShortStreamBytes);
  uint64_t c = crc;
  c = ThreeStreams<kStreamBytes>(c, p, n, kLong);
  c = ThreeStreams<kShortStreamBytes>(c, p, n, kShort);
  c = Stream(c, p, n);
  p += n / 8 * 8;
  n %= 8;
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (HasSse42()) return ~HardwareCrc(crc, p, size);
#endif
  return ~SoftwareCrc(crc, p, size);
}

uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t size) {
  return ~SoftwareCrc(~crc, static_cast<const uint8_t*>(data), size);
}

}  // namespace mc::tier
