#include "transfer/retire_sender.h"

#include <sys/uio.h>

#include <cstring>
#include <vector>

#include "net/stream_io.h"
#include "transfer/data_protocol.h"

namespace mc::transfer {

RetireSender::~RetireSender() {
  for (auto& [peer, conn] : conns_) CloseStream(conn);
}

Status RetireSender::Retire(const Endpoint& ep, std::span<const RetireRange> ranges) {
  const std::string peer = ep.host + ":" + std::to_string(ep.port);
  auto it = conns_.find(peer);
  const bool reused = it != conns_.end();
  if (!reused) {
    auto conn = ConnectDataPort(ep, options_.auth_token, options_.connect_timeout_us,
                                options_.tuning, options_.tls.get());
    if (!conn.ok()) return conn.status();
    it = conns_.emplace(peer, *conn).first;
  }
  Status st = Status::Ok();
  for (size_t at = 0; at < ranges.size() && st.ok(); at += kPipelineWindowOps) {
    const size_t n = std::min(kPipelineWindowOps, ranges.size() - at);
    st = RetireWindow(it->second, peer, ranges.subspan(at, n));
  }
  if (!st.ok() && st.code() != ErrorCode::INVALID_WRITE && st.code() != ErrorCode::INVALID_READ) {
    // The connection is in an unknown state: drop it. A connection the store
    // closed while idle fails at once; one fresh attempt covers that.
    CloseStream(it->second);
    conns_.erase(it);
    if (reused && st.code() != ErrorCode::RPC_TIMEOUT) return Retire(ep, ranges);
  }
  return st;
}

Status RetireSender::RetireWindow(net::Stream conn, const std::string& peer,
                                  std::span<const RetireRange> ranges) {
  uint8_t hdrs[kPipelineWindowOps][wire::kRequestBytes];
  iovec iov[kPipelineWindowOps];
  const uint64_t first_id = next_request_id_;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const RetireRange& r = ranges[i];
    wire::Request req;
    req.op = static_cast<uint16_t>(wire::Op::kRetire);
    req.request_id = next_request_id_++;
    req.offset = r.offset;
    req.length = r.size_bytes;
    SetRequestGrant(r.grant, &req);
    wire::EncodeRequest(req, hdrs[i]);
    iov[i] = {hdrs[i], wire::kRequestBytes};
  }
  MC_RETURN_IF_ERROR(net::SendAllV(conn, iov, static_cast<int>(ranges.size())));
  Status first_refusal = Status::Ok();
  for (size_t i = 0; i < ranges.size(); ++i) {
    uint8_t hdr[wire::kReplyBytes];
    MC_RETURN_IF_ERROR(net::RecvAll(conn, hdr, sizeof hdr));
    wire::Reply reply;
    MC_RETURN_IF_ERROR(wire::DecodeReply(hdr, &reply));
    if (reply.request_id != first_id + i) {
      return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply to request " +
                                                  std::to_string(reply.request_id) + ", expected " +
                                                  std::to_string(first_id + i));
    }
    if (reply.status == 0 && reply.length == 0) continue;
    if (reply.length > wire::kMaxErrorMessageBytes) {
      return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply of " +
                                                  std::to_string(reply.length) + " bytes to a RETIRE");
    }
    std::string msg(reply.length, '\0');
    MC_RETURN_IF_ERROR(net::RecvAll(conn, msg.data(), msg.size()));
    if (reply.status == 0) {
      return Error(ErrorCode::PROTOCOL_ERROR, peer + ": a RETIRE answered with bytes");
    }
    if (first_refusal.ok()) {
      const ErrorCode code = IsKnownErrorCode(reply.status) ? static_cast<ErrorCode>(reply.status)
                                                            : ErrorCode::TRANSFER_FAIL;
      first_refusal = Error(code, peer + ": RETIRE refused: " + msg);
    }
  }
  return first_refusal;
}

}  // namespace mc::transfer
