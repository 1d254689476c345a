// The cryptography of the handshake (see handshake.h): random nonces and the
// HMAC-SHA256 proofs, over common/crypto.h. Thread-safe.
#pragma once

#include <string_view>

#include "proto/handshake.h"

namespace mc::proto {

// Cryptographically random; aborts if the system cannot provide randomness
// (there is no safe fallback for a nonce).
Nonce RandomNonce();

Proof ClientProof(std::string_view token, const Nonce& server_nonce, const Nonce& client_nonce);
Proof ServerProof(std::string_view token, const Nonce& client_nonce, const Nonce& server_nonce);

// Constant-time comparison.
bool ProofEquals(const Proof& a, const Proof& b);

}  // namespace mc::proto
