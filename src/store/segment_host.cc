#include "store/segment_host.h"

#include <httplib.h>

#include <algorithm>
#include <cstring>

#include "client/client.h"
#include "common/capability.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/host_identity.h"
#include "common/log.h"
#include "common/units.h"
#include "dataserver/tcp_server.h"
#include "ha/etcd_http.h"
#include "rpc/client.h"
#include "tls/tls_setup.h"
#include "store/disk_tier_setup.h"
#include "store/segment_descriptor.h"
#include "store/tier_worker.h"
#include "transfer/access.h"
#include "transfer/rdma/rdma_desc.h"
#include "transfer/rdma/rdma_engine.h"
#include "transfer/rdma/rdma_responder.h"
#include "transfer/rdma/rdma_sealed.h"
#include "transfer/segment.h"

namespace mc::store {

namespace {

using proto::Opcode;

constexpr uint64_t kPingIntervalMs = 1000;
constexpr uint64_t kMaxBackoffMs = 5000;

// "http://host:port/path" -> (scheme://host:port, /path)
bool SplitUrl(const std::string& url, std::string* base, std::string* path) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  const std::string name = url.substr(0, scheme);
  if (name != "http" && name != "https") return false;
  auto slash = url.find('/', scheme + 3);
  *base = url.substr(0, slash);
  *path = slash == std::string::npos ? "/metadata" : url.substr(slash);
  return true;
}

// Metadata services the reference's transfer engine uses that mooncake's
// clients do not need (they find segments through the master): named in a
// setup, they start quietly, with one INFO line per process.
bool NoPublishingNeeded(const std::string& url) {
  return url == "P2PHANDSHAKE" || url.starts_with("redis://");
}

// Publishes the segment descriptor for reference transfer-engine peers.
// mooncake's own clients learn endpoints from the master, so a metadata
// server is optional: when none was configured (the URL is the built-in
// default) and nothing listens there, the store says so once at INFO and
// carries on; a configured server that fails is a WARN.
class MetadataPublisherImpl {
 public:
  // `auth_token`: the cluster's, sent as a bearer token (a metadata server
  // with a token refuses writes without it).
  // `tls`: an https:// URL is verified against tls.ca and presents tls.cert
  // (mutual TLS).
  MetadataPublisherImpl(const std::string& url, const std::string& auth_token,
                        const TlsConfig& tls)
      : url_(url), tls_(tls), is_default_(url == ClusterConfig{}.metadata_server) {
    if (!auth_token.empty()) headers_.emplace("Authorization", "Bearer " + auth_token);
    if (url.starts_with("etcd://")) {
      // The reference transfer engine's etcd plugin: the same keys
      // (mooncake/ram/<segment>) as etcd keys, values its JSON.
      auto etcd = ha::EtcdHttp::Open(url);
      if (etcd.ok()) {
        etcd_ = std::move(*etcd);
      } else {
        MC_LOG(WARN) << "metadata server '" << url << "': " << etcd.status().message();
      }
      return;
    }
    ok_ = SplitUrl(url, &base_, &path_);
    if (!ok_ && NoPublishingNeeded(url)) {
      static std::atomic<bool> told{false};
      if (!told.exchange(true)) {
        MC_LOG(INFO) << "metadata server '" << url << "': segment descriptor not published"
                     << " (mooncake clients find segments through the master)";
      }
    } else if (!ok_) {
      MC_LOG(WARN) << "metadata server '" << url << "' is not an http:// or https:// URL; not publishing";
    }
  }
  void Put(const std::string& key, const std::string& value) { Send("PUT", key, value); }
  void Delete(const std::string& key) { Send("DELETE", key, ""); }

 private:
  void Send(const char* method, const std::string& key, const std::string& value) {
    if (etcd_ != nullptr) return SendEtcd(method, key, value);
    if (!ok_) return;
    const std::string& key_file = tls_.key.empty() ? tls_.cert : tls_.key;
    httplib::Client cli(base_, tls_.cert, key_file);
    if (!tls_.ca.empty()) cli.set_ca_cert_path(tls_.ca.c_str());
    cli.set_connection_timeout(2);
    cli.set_read_timeout(2);
    std::string target = path_ + "?key=" + httplib::detail::encode_query_param(key);
    httplib::Result r = std::strcmp(method, "PUT") == 0
                            ? cli.Put(target.c_str(), headers_, value, "application/json")
                            : cli.Delete(target.c_str(), headers_);
    if (!r && is_default_ && r.error() == httplib::Error::Connection) {
      if (!told_absent_) {
        MC_LOG(INFO) << "no metadata server at " << url_
                     << " (the default; none configured): segment descriptor not published."
                     << " mooncake clients find segments through the master; reference"
                     << " transfer-engine peers need one (mooncake metadata-server, or"
                     << " master --enable-http-metadata-server)";
      }
      told_absent_ = true;
      return;
    }
    if (!r || (r->status != 200 && r->status != 404)) {
      MC_LOG(WARN) << "metadata server " << url_ << ": " << method << " " << key << " failed ("
                   << (r ? std::to_string(r->status) : httplib::to_string(r.error())) << ")";
    }
  }
  void SendEtcd(const char* method, const std::string& key, const std::string& value) {
    Status st;
    if (std::strcmp(method, "PUT") == 0) {
      st = ha::Put(*etcd_, key, value);
    } else {
      ha::Txn txn;
      txn.success.push_back({.kind = ha::TxnOp::Kind::kDeleteRange, .key = key});
      auto r = etcd_->Commit(txn);
      st = r.ok() ? Status::Ok() : r.status();
    }
    if (st.code() == ErrorCode::RPC_FAIL) {
      // No etcd there: engines name etcd:// for the reference's transfer
      // engine, which mooncake's own clients do not need (they find
      // segments through the master); say so once per process.
      static std::atomic<bool> told{false};
      if (!told.exchange(true)) {
        MC_LOG(INFO) << "metadata server '" << url_ << "': no etcd member answered; segment"
                     << " descriptor not published (mooncake clients find segments through"
                     << " the master)";
      }
    } else if (!st.ok()) {
      MC_LOG(WARN) << "metadata server " << url_ << ": " << method << " " << key
                   << " failed: " << st.ToString();
    }
  }
  std::string url_, base_, path_;
  std::unique_ptr<ha::EtcdHttp> etcd_;  // an etcd:// URL
  TlsConfig tls_;
  httplib::Headers headers_;
  bool is_default_;
  bool ok_ = false;
  bool told_absent_ = false;
};

}  // namespace

class MetadataPublisher : public MetadataPublisherImpl {
 public:
  using MetadataPublisherImpl::MetadataPublisherImpl;
};

Result<std::unique_ptr<SegmentHost>> SegmentHost::Create(const Config& config, msg::ClientId id) {
  std::unique_ptr<SegmentHost> h(new SegmentHost());
  h->config_ = config;
  h->id_ = id;
  transfer::SegmentOptions so;
  so.size_bytes = config.store.global_segment_size_bytes;
  so.try_huge_pages = config.store.hugepages;
  auto segment = transfer::Segment::Create(so);
  if (!segment.ok()) {
    return Error(segment.code(), "cannot reserve the segment: " + segment.status().message());
  }
  h->segment_ = std::move(*segment);
  MC_ASSIGN_OR_RETURN(h->tier_, OpenDiskTier(config.store));
  if (config.store.hugepages && h->segment_->page_kind() != transfer::PageKind::kHugeTlb) {
    const std::string advice = transfer::HugePageAdvice(so.size_bytes, transfer::FreeHugePages());
    if (!advice.empty()) MC_LOG(INFO) << "segment on 4 KiB pages: " << advice;
  }
  msg::SegmentDesc& desc = h->desc_;
  desc.size_bytes = h->segment_->size_bytes();
  desc.incarnation = RandomU64();
  desc.access_key = RandomBytes(32);
  desc.hostname = HostIdentity();
  desc.shm_path = h->segment_->shm_path();

  if (config.cluster.protocol == "rdma") {
    // RDMA peers WRITE into and READ from the segment one-sided: register it
    // on every selected NIC now, so a missing or inactive device is a
    // start-up error that names it.
    auto verbs = transfer::SystemVerbs();
    auto devices = transfer::OpenDevices(*verbs, config.cluster.device_name);
    if (!devices.ok()) {
      return Error(devices.code(), "protocol rdma: " + devices.status().message());
    }
    auto responder = transfer::RdmaResponder::Create(
        std::move(*devices), config.cluster.local_hostname, h->segment_->base(),
        h->segment_->size_bytes());
    if (!responder.ok()) {
      return Error(responder.code(), "protocol rdma: " + responder.status().message());
    }
    h->rdma_ = std::move(*responder);
    // One-sided writes count in no epoch, yet seals stay sound (retires
    // mark what the master reuses): the table is published for RDMA
    // readers (transfer/rdma/rdma_sealed.h, mooncake-protocol(7)).
    const uint64_t data = h->segment_->size_bytes();
    MC_RETURN_IF_ERROR(h->rdma_->AddEpochTable(h->segment_->base() + data,
                                               transfer::EpochTableTailBytes(data),
                                               transfer::NewEpochNonce()));
  }

  transfer::TcpDataServerOptions to;
  to.rdma = h->rdma_.get();
  to.epochs = h->segment_->epochs();
  // Grants of a deposed HA leader are refused once a newer term is seen
  // (transfer/term_fence.h).
  h->fence_ = std::make_shared<transfer::TermFence>();
  to.fence = h->fence_;
  to.port = config.store.port;
  to.max_connections = config.store.max_connections;
  to.auth_token = config.cluster.auth_token;
  MC_ASSIGN_OR_RETURN(to.tls, ServerTls(config.tls, {.listeners = "the data port"}));
  MC_ASSIGN_OR_RETURN(std::shared_ptr<net::TlsContext> client_tls, ClientTls(config.tls));
  h->server_tls_ = to.tls;
  h->client_tls_ = client_tls;
  // Every transfer must carry a grant the master signed with this
  // incarnation's key: writes only into in-progress puts, reads only of
  // complete, leased replicas (common/capability.h).
  h->keys_ = std::make_shared<transfer::SegmentKeys>(desc.access_key, desc.incarnation);
  auto server = transfer::TcpDataServer::Start(
      h->segment_->base(), h->segment_->size_bytes(),
      transfer::CapabilityCheck(h->keys_, [] { return SystemClock::Instance().UnixMs(); }),
      to);
  if (!server.ok()) {
    return Error(server.code(), "cannot start the data server: " + server.status().ToString());
  }
  h->server_ = std::move(*server);
  h->port_ = h->server_->port();
  desc.endpoint = config.cluster.local_hostname + ":" + std::to_string(h->port_);
  desc.name = desc.endpoint;
  h->link_ = std::make_unique<rpc::MasterClient>(
      client::MasterClientOptions(config.cluster, client_tls));
  h->meta_ = std::make_unique<MetadataPublisher>(config.cluster.metadata_server,
                                                config.cluster.auth_token, config.tls);
  return h;
}

SegmentHost::~SegmentHost() { Stop(); }

Status SegmentHost::ReloadTls() {
  if (server_tls_) MC_RETURN_IF_ERROR(server_tls_->Reload());
  if (client_tls_) MC_RETURN_IF_ERROR(client_tls_->Reload());
  return Status::Ok();
}

Result<bool> SegmentHost::Mount(const WaitFn& wait) {
  uint64_t backoff = 100;
  const msg::MountSegmentRequest req{id_, desc_};
  for (;;) {
    auto r = link_->Invoke<Opcode::kMountSegment>(req);
    if (r.ok()) {
      std::lock_guard lock(mu_);
      mounted_ = true;
      return true;
    }
    if (r.code() == ErrorCode::AUTH_FAILED) {
      return Error(ErrorCode::AUTH_FAILED, "the master refused this store's auth token (" +
                                               r.status().message() + ")");
    }
    MC_LOG(WARN) << "mounting segment " << desc_.name << " failed: " << r.status().ToString()
                 << "; retrying in " << backoff << " ms";
    if (wait(backoff)) return false;
    backoff = std::min(backoff * 2, kMaxBackoffMs);
  }
}

void SegmentHost::Start() {
  if (rdma_) {
    // Anyone may read the metadata server: with a token set the rkeys go
    // only to peers that authenticated on the data port (op 4).
    transfer::RdmaSegmentDesc pub = rdma_->desc();
    pub.name = desc_.name;
    if (!config_.cluster.auth_token.empty()) {
      for (auto& b : pub.buffers) b.rkey.clear(), b.lkey.clear();
    }
    meta_->Put("mooncake/ram/" + desc_.name, transfer::DescriptorJson(pub, port_));
  } else {
    meta_->Put("mooncake/ram/" + desc_.name,
               SegmentDescriptorJson(desc_, port_, reinterpret_cast<uint64_t>(segment_->base())));
  }
  // Every page of the segment is faulted in once, in the background, so
  // transfers into and out of it never pay first-touch faults; the segment
  // serves meanwhile (a transfer into a page not yet reached faults it
  // itself, as without prefault). The jthread is asked to stop and joined
  // when the host stops.
  if (config_.store.prefault) {
    prefault_ = std::jthread([&seg = *segment_](std::stop_token stop) {
      const uint64_t start_us = SystemClock::Instance().NowUs();
      const uint64_t done = seg.Prefault(stop);
      if (done == seg.mapped_bytes()) {
        MC_LOG(INFO) << "segment prefaulted: " << FormatBytesHuman(done) << " in "
                     << (SystemClock::Instance().NowUs() - start_us) / 1000 << " ms";
      }
    });
  }
  heartbeat_ = std::thread([this] { Heartbeat(); });
  if (tier_) {
    // The master holds an idle call up to half the RPC timeout.
    const uint64_t poll_wait_ms = std::min<uint64_t>(msg::kMaxTierPollWaitMs,
                                                     config_.cluster.rpc_timeout_us / 2000);
    tier_worker_ = std::make_unique<TierWorker>(id_, *link_, *segment_, *tier_,
                                                static_cast<uint32_t>(poll_wait_ms));
    tier_worker_->Start(desc_.name);
  }
}

std::string SegmentHost::Describe() const {
  std::string rdma;
  if (rdma_) {
    for (const auto& d : rdma_->device_names()) rdma += (rdma.empty() ? "" : ",") + d;
    rdma = ", rdma on " + rdma;
  }
  return desc_.name + " (" + FormatBytesHuman(desc_.size_bytes) + ", " +
         std::string(transfer::PageKindName(segment_->page_kind())) + " pages) mounted on master " +
         config_.cluster.master + ", data port " + std::to_string(port_) + rdma +
         DescribeDiskTier(tier_.get());
}

bool SegmentHost::Sleep(uint64_t ms) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
}

void SegmentHost::Heartbeat() {
  while (!Sleep(kPingIntervalMs)) {
    auto pong = link_->Invoke<Opcode::kPing>(msg::PingRequest{id_});
    if (!pong.ok()) {
      MC_LOG(WARN) << "heartbeat to master " << config_.cluster.master
                   << " failed: " << pong.status().ToString();
      continue;
    }
    fence_->Raise(pong->term);
    if (!pong->remount) continue;
    // The master does not know this store: it declared it dead (client_ttl
    // without a ping) and dropped its segment and the objects on it, or it
    // restarted without its state. Either way it holds nothing here.
    Reincarnate();
    MC_LOG(INFO) << "master asked to remount (it had dropped this store); mounting segment "
                 << desc_.name << " again as incarnation " << desc_.incarnation
                 << ", grants from before are void";
    auto again = Mount([this](uint64_t ms) { return Sleep(ms); });
    if (again.ok() && *again) MC_LOG(INFO) << "segment " << desc_.name << " mounted again";
    if (again.ok() && *again && tier_worker_) tier_worker_->Reannounce(id_);
    if (!again.ok()) {
      std::lock_guard lock(mu_);
      failure_ = again.status();
      return;
    }
    if (!*again) return;
  }
}

void SegmentHost::Reincarnate() {
  desc_.incarnation = RandomU64();
  desc_.access_key = RandomBytes(32);
  keys_->Set(desc_.access_key, desc_.incarnation);
  // The new keys void grants the store checks, but a one-sided RDMA read
  // names no grant: a client's cached seal of an object the master dropped
  // with this segment would still match once the master places a new
  // object there and its writer writes it one-sided (no epoch moves), and
  // the master sends no RETIRE for what it dropped. So the whole segment is
  // retired here, before it is mounted again: every count moves and every
  // granule is marked, and no seal from before matches again
  // (mooncake-protocol(7), "RDMA direct reads").
  transfer::WriteEpochs& epochs = segment_->epochs();
  if (epochs.valid()) epochs.Retire(0, segment_->size_bytes());
}

const transfer::WriteEpochs& SegmentHost::epochs() const { return segment_->epochs(); }

Status SegmentHost::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void SegmentHost::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  // The worker's call the master holds is answered by the unmount below.
  if (tier_worker_) tier_worker_->RequestStop();
  if (prefault_.joinable()) {
    prefault_.request_stop();
    prefault_.join();
  }
  if (mounted_) {
    MC_LOG(INFO) << "unmounting segment " << desc_.name;
    auto un = link_->Invoke<Opcode::kUnmountSegment>(msg::UnmountSegmentRequest{id_, desc_.name});
    if (!un.ok()) MC_LOG(WARN) << "unmount failed: " << un.status().ToString();
    meta_->Delete("mooncake/ram/" + desc_.name);
  }
  if (tier_worker_) tier_worker_->Stop();
  // Create can fail before the data server exists (a segment that does not
  // fit); the destructor still runs Stop.
  if (server_ == nullptr) return;
  server_->Stop();
  auto stats = server_->stats();
  MC_LOG(INFO) << "data server served " << stats.requests_served << " requests, refused "
               << stats.requests_refused << " (no valid grant or out of bounds), "
               << stats.protocol_errors << " malformed, " << stats.auth_failures
               << " failed authentications, " << stats.rdma_connects << " RDMA connections";
  LogDiskTierCounters(tier_.get());
}

}  // namespace mc::store
