#include "store/store_daemon.h"

#include <httplib.h>

#include <cstring>
#include <memory>
#include <thread>

#include "client/client.h"
#include "common/capability.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/host_identity.h"
#include "common/json_escape.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "common/signals.h"
#include "common/units.h"
#include "rpc/client.h"
#include "transfer/access.h"
#include "transfer/segment.h"
#include "transfer/tcp_server.h"

namespace mc::store {

namespace {

using proto::Opcode;

constexpr uint64_t kPingIntervalMs = 1000;
constexpr uint64_t kMaxBackoffMs = 5000;

// "http://host:port/path" -> (scheme://host:port, /path)
bool SplitUrl(const std::string& url, std::string* base, std::string* path) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos || url.compare(0, scheme, "http") != 0) return false;
  auto slash = url.find('/', scheme + 3);
  *base = url.substr(0, slash);
  *path = slash == std::string::npos ? "/metadata" : url.substr(slash);
  return true;
}

// The segment descriptor in the reference's layout (mooncake/ram/<name>).
std::string DescriptorJson(const msg::SegmentDesc& seg, uint16_t port, uint64_t addr) {
  return "{\"name\":\"" + JsonEscape(seg.name) + "\",\"protocol\":\"tcp\",\"tcp_data_port\":" +
         std::to_string(port) + ",\"buffers\":[{\"name\":\"" + JsonEscape(seg.name) +
         "\",\"addr\":" + std::to_string(addr) + ",\"length\":" + std::to_string(seg.size_bytes) +
         ",\"rkey\":[],\"lkey\":[]}],\"devices\":[]}";
}

// Publishes the segment descriptor for reference transfer-engine peers.
// mooncake's own clients learn endpoints from the master, so a metadata
// server is optional: when none was configured (the URL is the built-in
// default) and nothing listens there, the store says so once at INFO and
// carries on; a configured server that fails is a WARN.
class MetadataPublisher {
 public:
  // `auth_token`: the cluster's, sent as a bearer token (a metadata server
  // with a token refuses writes without it).
  MetadataPublisher(const std::string& url, const std::string& auth_token)
      : url_(url), is_default_(url == ClusterConfig{}.metadata_server) {
    if (!auth_token.empty()) headers_.emplace("Authorization", "Bearer " + auth_token);
    ok_ = SplitUrl(url, &base_, &path_);
    if (!ok_) MC_LOG(WARN) << "metadata server '" << url << "' is not an http:// URL; not publishing";
  }
  void Put(const std::string& key, const std::string& value) { Send("PUT", key, value); }
  void Delete(const std::string& key) { Send("DELETE", key, ""); }

 private:
  void Send(const char* method, const std::string& key, const std::string& value) {
    if (!ok_) return;
    httplib::Client cli(base_);
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
  std::string url_, base_, path_;
  httplib::Headers headers_;
  bool is_default_;
  bool ok_ = false;
  bool told_absent_ = false;
};

// Mounts the segment, retrying with backoff until it works or a stop
// (false). A refused token is returned at once: retrying cannot fix it.
Result<bool> MountWithRetry(rpc::MasterClient& link, const msg::MountSegmentRequest& req) {
  uint64_t backoff = 100;
  for (;;) {
    auto r = link.Invoke<Opcode::kMountSegment>(req);
    if (r.ok()) return true;
    if (r.code() == ErrorCode::AUTH_FAILED) {
      return Error(ErrorCode::AUTH_FAILED, "the master refused this store's auth token (" +
                                               r.status().message() + ")");
    }
    MC_LOG(WARN) << "mounting segment " << req.segment.name << " failed: " << r.status().ToString()
                 << "; retrying in " << backoff << " ms";
    if (WaitForStop(backoff)) return false;
    backoff = std::min(backoff * 2, kMaxBackoffMs);
  }
}

}  // namespace

Status RunStore(const Config& config) {
  InstallStopSignals();
  transfer::SegmentOptions so;
  so.size_bytes = config.store.global_segment_size_bytes;
  so.try_huge_pages = config.store.hugepages;
  auto segment = transfer::Segment::Create(so);
  if (!segment.ok()) {
    return Error(segment.code(), "cannot reserve the segment: " + segment.status().message());
  }
  if (config.store.hugepages && (*segment)->page_kind() != transfer::PageKind::kHugeTlb) {
    const std::string advice =
        transfer::HugePageAdvice(so.size_bytes, transfer::FreeHugePages());
    if (!advice.empty()) MC_LOG(INFO) << "segment on 4 KiB pages: " << advice;
  }
  msg::SegmentDesc desc;
  desc.size_bytes = (*segment)->size_bytes();
  desc.incarnation = RandomU64();
  desc.access_key = RandomBytes(32);
  desc.hostname = HostIdentity();
  desc.shm_path = (*segment)->shm_path();

  transfer::TcpDataServerOptions to;
  to.port = config.store.port;
  to.max_connections = config.store.max_connections;
  to.auth_token = config.cluster.auth_token;
  // Every transfer must carry a grant the master signed with this
  // incarnation's key: writes only into in-progress puts, reads only of
  // complete, leased replicas (common/capability.h).
  auto server = transfer::TcpDataServer::Start(
      (*segment)->base(), (*segment)->size_bytes(),
      transfer::CapabilityCheck(desc.access_key, desc.incarnation,
                                [] { return SystemClock::Instance().UnixMs(); }), to);
  if (!server.ok()) {
    return Error(server.code(), "cannot start the data server: " + server.status().ToString());
  }
  uint16_t port = (*server)->port();
  desc.endpoint = config.cluster.local_hostname + ":" + std::to_string(port);
  desc.name = desc.endpoint;

  auto link = std::make_unique<rpc::MasterClient>(client::MasterClientOptions(config.cluster));
  msg::ClientId id;
  std::string rid = RandomBytes(16);
  std::memcpy(&id.hi, rid.data(), 8);
  std::memcpy(&id.lo, rid.data() + 8, 8);
  msg::MountSegmentRequest mount{id, desc};
  MC_ASSIGN_OR_RETURN(bool mounted, MountWithRetry(*link, mount));
  if (!mounted) return Status::Ok();

  MetadataPublisher meta(config.cluster.metadata_server, config.cluster.auth_token);
  std::string meta_key = "mooncake/ram/" + desc.name;
  meta.Put(meta_key, DescriptorJson(desc, port, reinterpret_cast<uint64_t>((*segment)->base())));
  MC_LOG(INFO) << "store ready: segment " << desc.name << " ("
               << FormatBytesHuman(desc.size_bytes) << ", "
               << transfer::PageKindName((*segment)->page_kind()) << " pages) mounted on master "
               << config.cluster.master << ", data port " << port;
  NotifyServiceManager("READY=1");  // mounted: the master hands out this segment

  // Every page of the segment is faulted in once, in the background, so
  // transfers into and out of it never pay first-touch faults; the store
  // serves meanwhile (a transfer into a page not yet reached faults it
  // itself, as without prefault).
  // A jthread: leaving this function asks it to stop and joins it.
  std::jthread prefault;
  if (config.store.prefault) {
    prefault = std::jthread([&seg = **segment](std::stop_token stop) {
      const uint64_t start_us = SystemClock::Instance().NowUs();
      const uint64_t done = seg.Prefault(stop);
      if (done == seg.mapped_bytes()) {
        MC_LOG(INFO) << "segment prefaulted: " << FormatBytesHuman(done) << " in "
                     << (SystemClock::Instance().NowUs() - start_us) / 1000 << " ms";
      }
    });
  }

  Status outcome;
  while (!WaitForStop(kPingIntervalMs)) {
    auto pong = link->Invoke<Opcode::kPing>(msg::PingRequest{id});
    if (!pong.ok()) {
      MC_LOG(WARN) << "heartbeat to master " << config.cluster.master
                   << " failed: " << pong.status().ToString();
      continue;
    }
    if (pong->remount) {
      MC_LOG(INFO) << "master asked to remount; mounting segment " << desc.name << " again";
      auto again = MountWithRetry(*link, mount);
      if (!again.ok()) outcome = again.status();
      if (!again.ok() || !*again) break;
    }
  }
  MC_LOG(INFO) << "stopping: unmounting segment " << desc.name;
  NotifyServiceManager("STOPPING=1");
  auto un = link->Invoke<Opcode::kUnmountSegment>(msg::UnmountSegmentRequest{id, desc.name});
  if (!un.ok()) MC_LOG(WARN) << "unmount failed: " << un.status().ToString();
  meta.Delete(meta_key);
  (*server)->Stop();
  auto stats = (*server)->stats();
  MC_LOG(INFO) << "data server served " << stats.requests_served << " requests, refused "
               << stats.requests_refused << " (no valid grant or out of bounds), "
               << stats.protocol_errors << " malformed, " << stats.auth_failures
               << " failed authentications";
  return outcome;
}

}  // namespace mc::store
