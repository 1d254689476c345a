#include "proto/handshake.h"

namespace mc::proto {

namespace {
// A proof is present (1 + 32 bytes) or absent (a single 0 byte): one
// encoding per value.
void EncodeProof(Writer& w, bool has, const Proof& p) {
  w.Bool(has);
  if (has) w.Raw(p.data(), p.size());
}
void DecodeProof(Reader& r, bool* has, Proof* p) {
  *has = r.Bool("has_proof");
  p->fill(0);
  if (*has) r.Raw(p->data(), p->size(), "proof");
}
}  // namespace

void Encode(Writer& w, const HelloRequest& v) { w.Raw(v.client_nonce.data(), kNonceBytes); }
void Decode(Reader& r, HelloRequest* v) { r.Raw(v->client_nonce.data(), kNonceBytes, "client_nonce"); }

void Encode(Writer& w, const HelloReply& v) {
  w.U8(v.server_version);
  w.Bool(v.auth_required);
  w.Raw(v.server_nonce.data(), kNonceBytes);
}
void Decode(Reader& r, HelloReply* v) {
  v->server_version = r.U8("server_version");
  v->auth_required = r.Bool("auth_required");
  r.Raw(v->server_nonce.data(), kNonceBytes, "server_nonce");
}

void Encode(Writer& w, const AuthRequest& v) { EncodeProof(w, v.has_proof, v.client_proof); }
void Decode(Reader& r, AuthRequest* v) { DecodeProof(r, &v->has_proof, &v->client_proof); }
void Encode(Writer& w, const AuthReply& v) { EncodeProof(w, v.has_proof, v.server_proof); }
void Decode(Reader& r, AuthReply* v) { DecodeProof(r, &v->has_proof, &v->server_proof); }

std::string VersionMismatchMessage(unsigned client_version, unsigned server_version) {
  return "protocol version mismatch: client speaks version " + std::to_string(client_version) +
         ", server speaks version " + std::to_string(server_version);
}

}  // namespace mc::proto
