#include "proto/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace mc::proto {

namespace {
// Distinct labels for the two directions, so a proof one side sent can
// never be replayed as the other side's proof (reflection).
constexpr std::string_view kClientLabel = "mooncake-rpc client";
constexpr std::string_view kServerLabel = "mooncake-rpc server";

Proof Hmac(std::string_view token, std::string_view label, const Nonce& a, const Nonce& b) {
  uint8_t msg[19 + 2 * kNonceBytes];
  static_assert(kClientLabel.size() == 19 && kServerLabel.size() == 19);
  std::memcpy(msg, label.data(), label.size());
  std::memcpy(msg + label.size(), a.data(), kNonceBytes);
  std::memcpy(msg + label.size() + kNonceBytes, b.data(), kNonceBytes);
  Proof out{};
  unsigned int len = 0;
  uint8_t* res = HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), msg, sizeof msg,
                      out.data(), &len);
  if (res == nullptr || len != kProofBytes) {
    MC_LOG(ERROR) << "HMAC-SHA256 failed in OpenSSL";
    std::abort();
  }
  return out;
}
}  // namespace

Nonce RandomNonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) {
    MC_LOG(ERROR) << "RAND_bytes failed: no randomness for a handshake nonce";
    std::abort();
  }
  return n;
}

Proof ClientProof(std::string_view token, const Nonce& server_nonce, const Nonce& client_nonce) {
  return Hmac(token, kClientLabel, server_nonce, client_nonce);
}

Proof ServerProof(std::string_view token, const Nonce& client_nonce, const Nonce& server_nonce) {
  return Hmac(token, kServerLabel, client_nonce, server_nonce);
}

bool ProofEquals(const Proof& a, const Proof& b) {
  return CRYPTO_memcmp(a.data(), b.data(), kProofBytes) == 0;
}

}  // namespace mc::proto
