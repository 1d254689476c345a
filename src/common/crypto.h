// The few cryptographic primitives mooncake uses, over OpenSSL: HMAC-SHA256
// for challenge-response authentication and transfer capabilities, a CSPRNG
// for nonces and secrets, and a constant-time comparison. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mc {

inline constexpr size_t kHmacBytes = 32;

// 32 raw bytes.
std::string HmacSha256(std::string_view key, std::string_view message);

// `n` bytes from the OS CSPRNG (aborts if it fails: nothing safe to do then).
std::string RandomBytes(size_t n);
uint64_t RandomU64();

// Compares without an early exit, so timing does not reveal a prefix match.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

std::string HexEncode(std::string_view bytes);

}  // namespace mc
