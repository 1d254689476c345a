#include "common/crypto.h"

#include <doctest/doctest.h>

TEST_CASE("HMAC-SHA256 matches the RFC 4231 test vector") {
  std::string key(20, '\x0b');
  CHECK(mc::HexEncode(mc::HmacSha256(key, "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST_CASE("random bytes differ between calls and comparison is exact") {
  CHECK(mc::RandomBytes(16) != mc::RandomBytes(16));
  CHECK(mc::ConstantTimeEqual("abc", "abc"));
  CHECK_FALSE(mc::ConstantTimeEqual("abc", "abd"));
  CHECK_FALSE(mc::ConstantTimeEqual("abc", "ab"));
}
