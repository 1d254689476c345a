// RetireSender: the master's side of the data port's RETIRE (op 7,
// data_protocol.h): tells a store that the objects in some of its ranges
// were removed or replaced, so it serves no direct read of them any more
// (write_epochs.h). One persistent connection per store, requests pipelined
// in windows of kPipelineWindowOps.
//
// Not thread-safe: one sender thread owns it (masterd's Retirer).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "common/result.h"
#include "net/socket.h"
#include "transfer/tcp_transport.h"
#include "transfer/transport.h"

namespace mc::transfer {

struct RetireRange {
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  Grant grant;  // signed for CapabilityOp::kRetire over exactly this range
};

class RetireSender {
 public:
  // Uses options.auth_token, tls, connect_timeout_us and tuning.
  explicit RetireSender(TcpTransportOptions options) : options_(std::move(options)) {}
  ~RetireSender();
  RetireSender(const RetireSender&) = delete;
  RetireSender& operator=(const RetireSender&) = delete;

  // Retires every range on the store at `ep`; OK once the store acknowledged
  // all of them. A refused range fails the call with the store's reason; a
  // store that cannot be reached fails it within the connect or I/O timeout.
  Status Retire(const Endpoint& ep, std::span<const RetireRange> ranges);

 private:
  Status RetireWindow(net::Stream conn, const std::string& peer,
                      std::span<const RetireRange> ranges);

  TcpTransportOptions options_;
  std::map<std::string, net::Stream> conns_;  // by "host:port"
  uint64_t next_request_id_ = kAuthRequestId + 1;
};

}  // namespace mc::transfer
