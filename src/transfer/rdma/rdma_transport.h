// RdmaTransport: the Transport seam over RdmaEngine (rdma_engine.h), with
// peers reached through their data port: the handshake (data_protocol.h ops
// 4 and 5) runs on a connection that passed the port's AUTH when a token is
// set, so rkeys reach only authenticated peers. Ops to a store that serves no
// RDMA come back NOT_SUPPORTED for the caller to send over TCP.
// Sealed reads (TransferOp::sealed) prove their bytes by the store's write
// epochs, read one-sided too (rdma_sealed.h); a store that publishes no
// epoch table fails them NOT_SUPPORTED, for TCP.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "net/stream_io.h"
#include "net/tls.h"
#include "transfer/rdma/rdma_engine.h"
#include "transfer/rdma/verbs.h"
#include "transfer/transport.h"

namespace mc::transfer {

struct RdmaTransportOptions {
  std::string devices;  // "mlx5_0,mlx5_1"; empty: every device on the host
  RdmaEngineOptions engine;
  std::string auth_token;  // the data ports' token; empty: none
  uint64_t connect_timeout_us = 5000000;
  net::SocketTuning tuning;
  std::shared_ptr<net::TlsContext> tls;  // the data ports' TLS (client role); null: plain
};

class RdmaTransport final : public Transport {
 public:
  // Opens the devices (the error names a missing or inactive one).
  // `verbs`: null for libibverbs (SystemVerbs); tests pass a fake.
  static Result<std::unique_ptr<RdmaTransport>> Create(RdmaTransportOptions options,
                                                       Verbs* verbs = nullptr);
  ~RdmaTransport() override;

  std::string_view name() const override { return "rdma"; }
  Status Batch(std::span<TransferOp> ops) override;
  Status RegisterBuffer(void* addr, uint64_t len) { return engine_->RegisterBuffer(addr, len); }
  Status UnregisterBuffer(void* addr) { return engine_->UnregisterBuffer(addr); }
  RdmaEngineStats stats() const { return engine_->stats(); }
  std::vector<std::string> device_names() const { return engine_->device_names(); }

 private:
  RdmaTransport() = default;
  std::unique_ptr<RdmaEngine> engine_;
};

// The connector RdmaTransport uses: one authenticated data-port connection.
Result<std::unique_ptr<PeerConnector>> ConnectDataPortPeer(const Endpoint& ep,
                                                           const std::string& auth_token,
                                                           uint64_t connect_timeout_us,
                                                           const net::SocketTuning& tuning,
                                                           const net::TlsContext* tls = nullptr);

}  // namespace mc::transfer
