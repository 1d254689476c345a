// The connection handshake of the master RPC protocol: version exchange and
// challenge-response authentication (mooncake-protocol(7), HANDSHAKE).
//
//   client -> Hello     {client_nonce}              (header version = client's)
//   server -> Hello*    {status, version, auth_required, server_nonce}
//   client -> Auth      {has_proof, client_proof}
//   server -> Auth*     {status, has_proof, server_proof}        (* = reply)
//
// client_proof = HMAC-SHA256(token, "mooncake-rpc client" || server_nonce || client_nonce)
// server_proof = HMAC-SHA256(token, "mooncake-rpc server" || client_nonce || server_nonce)
// The token itself never crosses the wire. Payloads here are limited to
// kMaxHandshakePayloadBytes. Pure codecs (no OpenSSL; see auth.h for the
// HMAC): thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "proto/codec.h"

namespace mc::proto {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

struct HelloRequest {
  Nonce client_nonce{};
  bool operator==(const HelloRequest&) const = default;
};
// Body of an OK Hello reply.
struct HelloReply {
  uint8_t server_version = kProtocolVersion;
  bool auth_required = false;
  Nonce server_nonce{};
  bool operator==(const HelloReply&) const = default;
};
struct AuthRequest {
  bool has_proof = false;  // false: the client has no token
  Proof client_proof{};    // zero unless has_proof
  bool operator==(const AuthRequest&) const = default;
};
// Body of an OK Auth reply.
struct AuthReply {
  bool has_proof = false;  // false: the server has no token
  Proof server_proof{};
  bool operator==(const AuthReply&) const = default;
};

void Encode(Writer& w, const HelloRequest& v);
void Decode(Reader& r, HelloRequest* v);
void Encode(Writer& w, const HelloReply& v);
void Decode(Reader& r, HelloReply* v);
void Encode(Writer& w, const AuthRequest& v);
void Decode(Reader& r, AuthRequest* v);
void Encode(Writer& w, const AuthReply& v);
void Decode(Reader& r, AuthReply* v);

// "protocol version mismatch: client speaks version 2, server speaks version 1"
std::string VersionMismatchMessage(unsigned client_version, unsigned server_version);

}  // namespace mc::proto
