#include "common/crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <cstring>

// The SHA256_* calls are deprecated in OpenSSL 3 in favour of EVP, whose
// per-call context set-up is the cost avoided here; they remain supported.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace mc {

namespace {

// HMAC-SHA256 with the key's padded blocks already hashed: the master signs
// and a store checks one grant per buffer of every transfer, with a handful
// of keys (one per segment). OpenSSL 3's one-shot HMAC() looks the digest up
// and sets up a MAC context on every call (about 2.8 us on our 2-core VM,
// against 0.15 us from the saved states), which was a visible share of a
// 32-key batch get. SHA256_CTX is a plain struct, so a saved state is copied
// by assignment.
struct KeyedSha256 {
  std::string key;  // as given (the cache's lookup key)
  SHA256_CTX inner, outer;
};

void Prepare(std::string_view key, KeyedSha256* k) {
  k->key.assign(key);
  unsigned char block[SHA256_CBLOCK] = {};
  if (key.size() > sizeof(block)) {
    SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), block);
  } else {
    std::memcpy(block, key.data(), key.size());
  }
  unsigned char pad[SHA256_CBLOCK];
  for (size_t i = 0; i < sizeof(pad); ++i) pad[i] = block[i] ^ 0x36;
  SHA256_Init(&k->inner);
  SHA256_Update(&k->inner, pad, sizeof(pad));
  for (size_t i = 0; i < sizeof(pad); ++i) pad[i] = block[i] ^ 0x5c;
  SHA256_Init(&k->outer);
  SHA256_Update(&k->outer, pad, sizeof(pad));
  OPENSSL_cleanse(block, sizeof(block));
  OPENSSL_cleanse(pad, sizeof(pad));
}

// Keys a thread prepared lately; past kCachedKeys the oldest is replaced.
constexpr size_t kCachedKeys = 8;
struct KeyCache {
  KeyedSha256 keys[kCachedKeys];
  size_t used = 0, next = 0;
  ~KeyCache() {
    for (KeyedSha256& k : keys) {
      OPENSSL_cleanse(&k.inner, sizeof(k.inner));
      OPENSSL_cleanse(&k.outer, sizeof(k.outer));
      if (!k.key.empty()) OPENSSL_cleanse(k.key.data(), k.key.size());
    }
  }
};

const KeyedSha256& Keyed(std::string_view key) {
  thread_local KeyCache cache;
  for (size_t i = 0; i < cache.used; ++i) {
    if (cache.keys[i].key == key) return cache.keys[i];
  }
  KeyedSha256& slot = cache.keys[cache.next];
  cache.next = (cache.next + 1) % kCachedKeys;
  if (cache.used < kCachedKeys) ++cache.used;
  Prepare(key, &slot);
  return slot;
}

}  // namespace

std::string HmacSha256(std::string_view key, std::string_view message) {
  const KeyedSha256& k = Keyed(key);
  unsigned char inner_hash[SHA256_DIGEST_LENGTH];
  SHA256_CTX c = k.inner;
  SHA256_Update(&c, message.data(), message.size());
  SHA256_Final(inner_hash, &c);
  std::string out(kHmacBytes, '\0');
  c = k.outer;
  SHA256_Update(&c, inner_hash, sizeof(inner_hash));
  SHA256_Final(reinterpret_cast<unsigned char*>(out.data()), &c);
  return out;
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
