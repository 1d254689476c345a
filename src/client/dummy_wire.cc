#include "client/dummy_wire.h"

#include <unistd.h>

#include "net/unix_socket.h"
#include "proto/frame.h"

namespace mc::client {

namespace {
// The first read takes a small frame whole.
constexpr size_t kFirstReadBytes = 4096;
}  // namespace

Status SendDummyFrame(int sock, const DummyFrame& frame) {
  proto::FrameHeader h;
  h.flags = frame.reply ? proto::kFlagReply : 0;
  h.opcode = static_cast<proto::Opcode>(frame.opcode);
  h.payload_bytes = static_cast<uint32_t>(frame.payload.size());
  h.request_id = frame.request_id;
  std::string bytes;
  bytes.reserve(proto::kFrameHeaderBytes + frame.payload.size());
  bytes.resize(proto::kFrameHeaderBytes);
  proto::EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(bytes.data()));
  bytes += frame.payload;
  return net::SendUnix(sock, bytes, frame.fd);
}

Status RecvDummyFrame(int sock, DummyFrame* frame) {
  char first[kFirstReadBytes];
  int fd = -1;
  auto got = net::RecvUnixSome(sock, first, sizeof(first), &fd);
  if (!got.ok()) return got.status();
  size_t n = *got;
  frame->fd = fd;
  auto fail = [frame](Status st) {
    if (frame->fd >= 0) ::close(frame->fd);
    frame->fd = -1;
    return st;
  };
  if (n < proto::kFrameHeaderBytes) {
    int late = -1;
    Status st = net::RecvUnix(sock, first + n, proto::kFrameHeaderBytes - n, &late);
    if (late >= 0) ::close(late);
    if (!st.ok()) return fail(st);
    n = proto::kFrameHeaderBytes;
  }
  auto h = proto::DecodeFrameHeader(reinterpret_cast<const uint8_t*>(first),
                                    proto::kFrameHeaderBytes, kMaxDummyPayloadBytes);
  if (!h.ok()) return fail(h.status());
  const size_t have = n - proto::kFrameHeaderBytes;
  if (have > h->payload_bytes) {
    return fail(Error(ErrorCode::PROTOCOL_ERROR, "bytes past the end of a dummy frame"));
  }
  frame->opcode = static_cast<uint16_t>(h->opcode);
  frame->reply = h->is_reply();
  frame->request_id = h->request_id;
  frame->payload.assign(first + proto::kFrameHeaderBytes, have);
  frame->payload.resize(h->payload_bytes);
  if (have == h->payload_bytes) return Status::Ok();
  int late = -1;
  Status st = net::RecvUnix(sock, frame->payload.data() + have, h->payload_bytes - have, &late);
  if (late >= 0) ::close(late);
  return st.ok() ? st : fail(st);
}

}  // namespace mc::client
