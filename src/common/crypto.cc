#include "common/crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

namespace mc {

std::string HmacSha256(std::string_view key, std::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  unsigned char* ok = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                           reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                           out, &len);
  if (ok == nullptr || len != kHmacBytes) std::abort();
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::abort();
  }
  return out;
}

uint64_t RandomU64() {
  std::string b = RandomBytes(8);
  uint64_t v;
  std::memcpy(&v, b.data(), 8);
  return v;
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace mc
