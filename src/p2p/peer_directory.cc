#include "p2p/peer_directory.h"

#include <httplib.h>

#include <charconv>
#include <map>
#include <mutex>

#include "common/log.h"

namespace mc::p2p {
namespace {

// Seconds an HTTP call to the metadata server may take (connect, then read).
constexpr int kMetadataTimeoutS = 3;

class HandshakeDirectory final : public PeerDirectory {
 public:
  std::string SegmentName(const std::string& local_hostname, uint16_t port) const override {
    return HostPart(local_hostname) + ":" + std::to_string(port);
  }
  Status Publish(const std::string&, const PeerAddress&) override { return Status::Ok(); }
  void Unpublish(const std::string&) override {}
  Result<PeerAddress> Resolve(const std::string& name) override { return ParseHostPort(name); }
  void Forget(const std::string&) override {}
};

class HttpDirectory final : public PeerDirectory {
 public:
  HttpDirectory(std::string base, std::string path, const std::string& auth_token)
      : base_(std::move(base)), path_(std::move(path)) {
    if (!auth_token.empty()) headers_.emplace("Authorization", "Bearer " + auth_token);
  }
  std::string SegmentName(const std::string& local_hostname, uint16_t) const override {
    return local_hostname;
  }
  Status Publish(const std::string& name, const PeerAddress& self) override {
    auto cli = Client();
    const std::string value = self.host + ":" + std::to_string(self.port);
    auto r = cli.Put(Target(name), headers_, value, "text/plain");
    if (!r || r->status != 200) return Failed("PUT", name, r);
    return Status::Ok();
  }
  void Unpublish(const std::string& name) override {
    auto cli = Client();
    auto r = cli.Delete(Target(name), headers_);
    if (!r || (r->status != 200 && r->status != 404)) {
      MC_LOG(WARN) << Failed("DELETE", name, r).message();
    }
  }
  Result<PeerAddress> Resolve(const std::string& name) override {
    {
      std::lock_guard lock(mu_);
      auto it = cache_.find(name);
      if (it != cache_.end()) return it->second;
    }
    auto cli = Client();
    auto r = cli.Get(Target(name));
    if (r && r->status == 404) {
      return Error(ErrorCode::SEGMENT_NOT_FOUND,
                   "segment '" + name + "' is not published on " + base_ + path_);
    }
    if (!r || r->status != 200) return Failed("GET", name, r);
    auto addr = ParseHostPort(r->body);
    if (!addr.ok()) return addr.status();
    std::lock_guard lock(mu_);
    cache_[name] = addr.value();
    return addr;
  }
  void Forget(const std::string& name) override {
    std::lock_guard lock(mu_);
    cache_.erase(name);
  }

 private:
  httplib::Client Client() const {
    httplib::Client cli(base_);
    cli.set_connection_timeout(kMetadataTimeoutS);
    cli.set_read_timeout(kMetadataTimeoutS);
    return cli;
  }
  std::string Target(const std::string& name) const {
    return path_ + "?key=" +
           httplib::detail::encode_query_param(std::string(kDirectoryKeyPrefix) + name);
  }
  Status Failed(const char* method, const std::string& name, const httplib::Result& r) const {
    return Error(ErrorCode::RPC_FAIL,
                 std::string("metadata server ") + base_ + ": " + method + " of segment '" + name +
                     "' failed (" +
                     (r ? "HTTP " + std::to_string(r->status) : httplib::to_string(r.error())) +
                     ")");
  }

  const std::string base_, path_;
  httplib::Headers headers_;
  std::mutex mu_;
  std::map<std::string, PeerAddress> cache_;  // guarded by mu_
};

}  // namespace

Result<PeerAddress> ParseHostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (text.size() > kMaxSegmentNameBytes || colon == std::string::npos || colon == 0) {
    return Error(ErrorCode::INVALID_PARAMS, "'" + text + "' is not host:port");
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || end != last || port == 0 || port > 65535) {
    return Error(ErrorCode::INVALID_PARAMS, "'" + text + "' has no port 1..65535 after ':'");
  }
  return PeerAddress{std::move(host), static_cast<uint16_t>(port)};
}

std::string HostPart(const std::string& local_hostname) {
  auto addr = ParseHostPort(local_hostname);
  return addr.ok() ? addr->host : local_hostname;
}

Result<std::unique_ptr<PeerDirectory>> MakePeerDirectory(const std::string& metadata_server,
                                                         const std::string& auth_token) {
  if (metadata_server == kP2pHandshake) {
    return std::unique_ptr<PeerDirectory>(std::make_unique<HandshakeDirectory>());
  }
  for (std::string_view scheme : {"http://", "https://"}) {
    if (metadata_server.rfind(scheme, 0) != 0) continue;
    const size_t slash = metadata_server.find('/', scheme.size());
    std::string base = metadata_server.substr(0, slash);
    std::string path = slash == std::string::npos ? "/metadata" : metadata_server.substr(slash);
    return std::unique_ptr<PeerDirectory>(
        std::make_unique<HttpDirectory>(std::move(base), std::move(path), auth_token));
  }
  return Error(ErrorCode::INVALID_PARAMS,
               "metadata server '" + metadata_server +
                   "': use P2PHANDSHAKE or an http:// URL (etcd and redis are not built)");
}

}  // namespace mc::p2p
