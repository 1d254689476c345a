#include "transfer/rdma/rdma_transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "transfer/data_protocol.h"
#include "transfer/rdma/rdma_sealed.h"
#include "transfer/tcp_transport.h"

namespace mc::transfer {

namespace {

class DataPortPeer final : public PeerConnector {
 public:
  DataPortPeer(net::Stream s, std::string peer) : fd_(s), peer_(std::move(peer)) {}
  ~DataPortPeer() override { CloseStream(fd_); }

  Result<RdmaSegmentDesc> Describe() override {
    auto r = DataPortCall(fd_, peer_, static_cast<uint16_t>(wire::Op::kRdmaDescribe), next_id_++,
                          {}, wire::kMaxRdmaDescribeReplyBytes);
    if (!r.ok()) {
      // A store from before RDMA refuses op 4 as unknown (and hangs up).
      if (r.code() == ErrorCode::PROTOCOL_ERROR || r.code() == ErrorCode::NOT_SUPPORTED) {
        return Error(ErrorCode::NOT_SUPPORTED, peer_ + " serves no RDMA: " + r.status().message());
      }
      return r.status();
    }
    return DecodeDescriptor(*r);
  }

  Result<RdmaConnectReply> Connect(const RdmaConnectRequest& req) override {
    MC_ASSIGN_OR_RETURN(std::string r,
                        DataPortCall(fd_, peer_, static_cast<uint16_t>(wire::Op::kRdmaConnect),
                                     next_id_++, EncodeConnectRequest(req),
                                     wire::kMaxRdmaConnectBytes));
    return DecodeConnectReply(r);
  }

  bool Alive() override {
    // The store never speaks first: readable means it closed (restarted).
    pollfd p{fd_.fd, POLLIN, 0};
    return poll(&p, 1, 0) == 0;
  }

 private:
  net::Stream fd_;
  std::string peer_;
  uint64_t next_id_ = kAuthRequestId + 1;
};

}  // namespace

Result<std::unique_ptr<PeerConnector>> ConnectDataPortPeer(const Endpoint& ep,
                                                           const std::string& auth_token,
                                                           uint64_t connect_timeout_us,
                                                           const net::SocketTuning& tuning,
                                                           const net::TlsContext* tls) {
  MC_ASSIGN_OR_RETURN(net::Stream fd,
                      ConnectDataPort(ep, auth_token, connect_timeout_us, tuning, tls));
  return std::unique_ptr<PeerConnector>(
      new DataPortPeer(fd, ep.host + ":" + std::to_string(ep.port)));
}

Result<std::unique_ptr<RdmaTransport>> RdmaTransport::Create(RdmaTransportOptions options,
                                                             Verbs* verbs) {
  std::unique_ptr<Verbs> system;
  if (verbs == nullptr) {
    system = SystemVerbs();
    verbs = system.get();
  }
  MC_ASSIGN_OR_RETURN(auto devices, OpenDevices(*verbs, options.devices));
  auto connect = [o = options](const Endpoint& ep) {
    return ConnectDataPortPeer(ep, o.auth_token, o.connect_timeout_us, o.tuning, o.tls.get());
  };
  MC_ASSIGN_OR_RETURN(auto engine,
                      RdmaEngine::Create(std::move(devices), connect, options.engine));
  std::unique_ptr<RdmaTransport> t(new RdmaTransport());
  t->engine_ = std::move(engine);
  return t;
}

RdmaTransport::~RdmaTransport() = default;

Status RdmaTransport::Batch(std::span<TransferOp> ops) {
  const auto sealed = [](const TransferOp& op) { return op.sealed; };
  if (std::none_of(ops.begin(), ops.end(), sealed)) return engine_->Batch(ops);
  MC_RETURN_IF_ERROR(ValidateBatch(ops));
  // Sealed reads prove their bytes by the store's epochs (rdma_sealed.h);
  // the rest go as they are, in a batch of their own.
  std::vector<TransferOp> part[2];
  std::vector<size_t> where[2];
  for (size_t i = 0; i < ops.size(); ++i) {
    part[sealed(ops[i])].push_back(ops[i]);
    where[sealed(ops[i])].push_back(i);
  }
  if (!part[0].empty()) {
    const Status st = engine_->Batch(part[0]);
    for (TransferOp& op : part[0]) {
      if (!st.ok() && op.status.ok()) op.status = st;  // refused whole
    }
  }
  (void)RdmaSealedReads(*engine_, part[1]);
  Status first;
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool s = sealed(ops[i]);
    const size_t at = static_cast<size_t>(
        std::lower_bound(where[s].begin(), where[s].end(), i) - where[s].begin());
    const TransferOp& done = part[s][at];
    ops[i].status = done.status;
    ops[i].seal = done.seal;
    ops[i].peer_unreachable = done.peer_unreachable;
    if (!done.status.ok() && first.ok()) first = done.status;
  }
  return first;
}

}  // namespace mc::transfer
