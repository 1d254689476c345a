#include "rpc/handler.h"

#include <cstdio>

namespace mc::rpc {

using namespace mc::proto;  // this layer speaks the wire format (a .cc, not a header)

namespace {
// Adapts a Status answer to the Result<Empty> shape of the reply encoder.
Result<Empty> AsResult(Status s) {
  if (!s.ok()) return s;
  return Empty{};
}
template <typename T>
Result<T> AsResult(Result<T> r) {
  return r;
}

template <Opcode op, typename F>
void Serve(std::string_view payload, std::string* out, F call) {
  RequestOf<op> req{};
  Status st = DecodePayload(payload, &req, OpcodeName(op));
  if (!st.ok()) return EncodeErrorReply(st, out);
  EncodeReply(AsResult(call(req)), out);
}
}  // namespace

msg::Batch<msg::PutStartRequest> WithoutEx(const msg::Batch<msg::PutStartExRequest>& req) {
  msg::Batch<msg::PutStartRequest> plain;
  plain.reserve(req.size());
  for (const auto& r : req) plain.push_back(r.start);
  return plain;
}

void Dispatch(Handler& h, Opcode op, std::string_view payload, std::string* out) {
  switch (op) {
#define MC_RPC_SERVE(name, value, Req, Rep, kind) \
  case Opcode::k##name:                           \
    return Serve<Opcode::k##name>(payload, out, [&](const auto& req) { return h.name(req); });
    MC_MASTER_OPS(MC_RPC_SERVE)
#undef MC_RPC_SERVE
    case Opcode::kConnectionError:
    case Opcode::kHello:
    case Opcode::kAuth:
      return EncodeErrorReply(
          Error(ErrorCode::PROTOCOL_ERROR,
                std::string(OpcodeName(op)) + " is only valid at the start of a connection"),
          out);
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%04x", static_cast<unsigned>(op));
  EncodeErrorReply(Error(ErrorCode::NOT_SUPPORTED, std::string("unknown opcode ") + hex), out);
}

}  // namespace mc::rpc
