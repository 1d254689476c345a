#include "common/crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <doctest/doctest.h>

#include <random>

#include "common/test_seed.h"

TEST_CASE("HMAC-SHA256 matches the RFC 4231 test vector") {
  std::string key(20, '\x0b');
  CHECK(mc::HexEncode(mc::HmacSha256(key, "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST_CASE("HMAC-SHA256 with a key longer than a block matches RFC 4231 case 6") {
  std::string key(131, '\xaa');
  CHECK(mc::HexEncode(mc::HmacSha256(key, "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("HMAC-SHA256 agrees with OpenSSL's HMAC over more keys than it keeps prepared") {
  // The saved key states are cached per thread; cycling through 20 keys of
  // every length class (empty, short, a block, longer) replaces them often.
  std::mt19937_64 rng(mc::TestSeed("hmac"));
  std::vector<std::string> keys;
  for (size_t len : {0, 1, 16, 32, 63, 64, 65, 100, 131, 200}) {
    for (int copy = 0; copy < 2; ++copy) {
      std::string k(len, '\0');
      for (char& c : k) c = static_cast<char>(rng());
      keys.push_back(k);
    }
  }
  for (int round = 0; round < 200; ++round) {
    const std::string& key = keys[rng() % keys.size()];
    std::string msg(rng() % 300, '\0');
    for (char& c : msg) c = static_cast<char>(rng());
    unsigned char want[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), want, &len);
    REQUIRE(len == mc::kHmacBytes);
    CHECK(mc::HmacSha256(key, msg) == std::string(reinterpret_cast<char*>(want), len));
  }
}

TEST_CASE("random bytes differ between calls and comparison is exact") {
  CHECK(mc::RandomBytes(16) != mc::RandomBytes(16));
  CHECK(mc::ConstantTimeEqual("abc", "abc"));
  CHECK_FALSE(mc::ConstantTimeEqual("abc", "abd"));
  CHECK_FALSE(mc::ConstantTimeEqual("abc", "ab"));
}
