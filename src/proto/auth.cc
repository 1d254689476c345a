#include "proto/auth.h"

#include <cstring>

#include "common/crypto.h"

namespace mc::proto {

namespace {
// Distinct labels for the two directions, so a proof one side sent can
// never be replayed as the other side's proof (reflection).
constexpr std::string_view kClientLabel = "mooncake-rpc client";
constexpr std::string_view kServerLabel = "mooncake-rpc server";

Proof Hmac(std::string_view token, std::string_view label, const Nonce& a, const Nonce& b) {
  std::string msg;
  msg.reserve(label.size() + 2 * kNonceBytes);
  msg.append(label);
  msg.append(reinterpret_cast<const char*>(a.data()), kNonceBytes);
  msg.append(reinterpret_cast<const char*>(b.data()), kNonceBytes);
  std::string mac = HmacSha256(token, msg);
  static_assert(kHmacBytes == kProofBytes);
  Proof out{};
  std::memcpy(out.data(), mac.data(), kProofBytes);
  return out;
}
}  // namespace

Nonce RandomNonce() {
  std::string bytes = RandomBytes(kNonceBytes);
  Nonce n{};
  std::memcpy(n.data(), bytes.data(), kNonceBytes);
  return n;
}

Proof ClientProof(std::string_view token, const Nonce& server_nonce, const Nonce& client_nonce) {
  return Hmac(token, kClientLabel, server_nonce, client_nonce);
}

Proof ServerProof(std::string_view token, const Nonce& client_nonce, const Nonce& server_nonce) {
  return Hmac(token, kServerLabel, client_nonce, server_nonce);
}

bool ProofEquals(const Proof& a, const Proof& b) {
  return ConstantTimeEqual(std::string_view(reinterpret_cast<const char*>(a.data()), kProofBytes),
                           std::string_view(reinterpret_cast<const char*>(b.data()), kProofBytes));
}

}  // namespace mc::proto
