#include "client/dummy_wire.h"

#include <unistd.h>

#include "net/unix_socket.h"
#include "proto/frame.h"

namespace mc::client {

Status SendDummyFrame(int sock, const DummyFrame& frame, uint64_t deadline_us) {
  proto::FrameHeader h;
  h.flags = frame.reply ? proto::kFlagReply : 0;
  h.opcode = static_cast<proto::Opcode>(frame.opcode);
  h.payload_bytes = static_cast<uint32_t>(frame.payload.size());
  h.request_id = frame.request_id;
  std::string bytes(proto::kFrameHeaderBytes, '\0');
  proto::EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(bytes.data()));
  bytes += frame.payload;
  return net::SendUnix(sock, bytes, frame.fd, deadline_us);
}

Status RecvDummyFrame(int sock, DummyFrame* frame, uint64_t deadline_us) {
  char head[proto::kFrameHeaderBytes];
  int fd = -1;
  MC_RETURN_IF_ERROR(net::RecvUnix(sock, head, sizeof(head), &fd, deadline_us));
  auto h = proto::DecodeFrameHeader(reinterpret_cast<const uint8_t*>(head), sizeof(head),
                                    kMaxDummyPayloadBytes);
  if (!h.ok()) {
    if (fd >= 0) ::close(fd);
    return h.status();
  }
  frame->opcode = static_cast<uint16_t>(h->opcode);
  frame->reply = h->is_reply();
  frame->request_id = h->request_id;
  frame->payload.resize(h->payload_bytes);
  frame->fd = fd;
  if (h->payload_bytes == 0) return Status::Ok();
  int late_fd = -1;
  Status st = net::RecvUnix(sock, frame->payload.data(), h->payload_bytes, &late_fd, deadline_us);
  if (late_fd >= 0) {
    if (frame->fd < 0) frame->fd = late_fd; else ::close(late_fd);
  }
  if (!st.ok() && frame->fd >= 0) {
    ::close(frame->fd);
    frame->fd = -1;
  }
  return st;
}

}  // namespace mc::client
