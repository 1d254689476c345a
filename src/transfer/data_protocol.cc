#include "transfer/data_protocol.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

#include "common/byte_io.h"

namespace mc::transfer::wire {

namespace {

constexpr std::string_view kAuthDomain = "mooncake-transfer-auth-v1";

Status BadMagic(const char* what, uint32_t got) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "bad %s magic 0x%08x", what, got);
  return Error(ErrorCode::PROTOCOL_ERROR, buf);
}

}  // namespace

void EncodeHello(const Hello& h, uint8_t out[kHelloBytes]) {
  StoreLe32(out, kHelloMagic);
  StoreLe16(out + 4, h.version);
  StoreLe16(out + 6, h.flags);
  StoreLe64(out + 8, h.segment_bytes);
  std::memcpy(out + 16, h.nonce.data(), kNonceBytes);
}

Status DecodeHello(const uint8_t in[kHelloBytes], Hello* out) {
  if (LoadLe32(in) != kHelloMagic) return BadMagic("hello", LoadLe32(in));
  out->version = LoadLe16(in + 4);
  if (out->version != kVersion) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 "server speaks transfer protocol version " + std::to_string(out->version));
  }
  out->flags = LoadLe16(in + 6);
  out->segment_bytes = LoadLe64(in + 8);
  std::memcpy(out->nonce.data(), in + 16, kNonceBytes);
  return Status::Ok();
}

static_assert(64 + kMacBytes == kRequestBytes, "request header layout");

void EncodeRequest(const Request& r, uint8_t out[kRequestBytes]) {
  StoreLe32(out, kRequestMagic);
  StoreLe16(out + 4, r.op);
  StoreLe16(out + 6, 0);
  StoreLe64(out + 8, r.request_id);
  StoreLe64(out + 16, r.offset);
  StoreLe64(out + 24, r.length);
  StoreLe64(out + 32, r.grant_offset);
  StoreLe64(out + 40, r.grant_size);
  StoreLe64(out + 48, r.grant_expiry_unix_ms);
  StoreLe64(out + 56, r.grant_term);
  std::memcpy(out + 64, r.grant_mac.data(), kMacBytes);
}

Status DecodeRequest(const uint8_t in[kRequestBytes], Request* out) {
  if (LoadLe32(in) != kRequestMagic) return BadMagic("request", LoadLe32(in));
  if (LoadLe16(in + 6) != 0) return Error(ErrorCode::PROTOCOL_ERROR, "reserved bits set in request");
  out->op = LoadLe16(in + 4);
  out->request_id = LoadLe64(in + 8);
  out->offset = LoadLe64(in + 16);
  out->length = LoadLe64(in + 24);
  out->grant_offset = LoadLe64(in + 32);
  out->grant_size = LoadLe64(in + 40);
  out->grant_expiry_unix_ms = LoadLe64(in + 48);
  out->grant_term = LoadLe64(in + 56);
  std::memcpy(out->grant_mac.data(), in + 64, kMacBytes);
  return Status::Ok();
}

void EncodeReply(const Reply& r, uint8_t out[kReplyBytes]) {
  StoreLe32(out, kReplyMagic);
  StoreLe32(out + 4, static_cast<uint32_t>(r.status));
  StoreLe64(out + 8, r.request_id);
  StoreLe64(out + 16, r.length);
}

Status DecodeReply(const uint8_t in[kReplyBytes], Reply* out) {
  if (LoadLe32(in) != kReplyMagic) return BadMagic("reply", LoadLe32(in));
  out->status = static_cast<int32_t>(LoadLe32(in + 4));
  out->request_id = LoadLe64(in + 8);
  out->length = LoadLe64(in + 16);
  return Status::Ok();
}

std::array<uint8_t, kMacBytes> AuthMac(std::string_view token,
                                       const std::array<uint8_t, kNonceBytes>& nonce) {
  uint8_t msg[kAuthDomain.size() + kNonceBytes];
  std::memcpy(msg, kAuthDomain.data(), kAuthDomain.size());
  std::memcpy(msg + kAuthDomain.size(), nonce.data(), kNonceBytes);
  std::array<uint8_t, kMacBytes> mac{};
  unsigned int mac_len = 0;
  uint8_t* ok = HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), msg, sizeof(msg),
                     mac.data(), &mac_len);
  assert(ok != nullptr && mac_len == kMacBytes);
  (void)ok;
  return mac;
}

bool MacEqual(const uint8_t* a, const uint8_t* b) { return CRYPTO_memcmp(a, b, kMacBytes) == 0; }

Status RandomNonce(std::array<uint8_t, kNonceBytes>* out) {
  if (RAND_bytes(out->data(), static_cast<int>(out->size())) != 1) {
    return Error(ErrorCode::INTERNAL_ERROR, "RAND_bytes failed to produce a nonce");
  }
  return Status::Ok();
}

}  // namespace mc::transfer::wire
