#include "client/rest_backend.h"

namespace mc::client {

Status ClientRestBackend::Put(const std::string& key, std::span<const uint8_t> value) {
  // An HTTP PUT replaces: a tool re-sending a key expects the new bytes.
  msg::PutOptions options;
  options.upsert = true;
  return client_.Put(key, value, options);
}

Result<std::string> ClientRestBackend::Get(const std::string& key) {
  auto bytes = client_.Get(key);
  if (!bytes.ok()) return bytes.status();
  return std::string(bytes->begin(), bytes->end());
}

Result<bool> ClientRestBackend::Exists(const std::string& key) { return client_.Exists(key); }

Status ClientRestBackend::Remove(const std::string& key) { return client_.Remove(key, false); }

Result<int64_t> ClientRestBackend::RemoveAll() {
  auto n = client_.RemoveAll(false);
  if (!n.ok()) return n.status();
  return static_cast<int64_t>(n.value());
}

Status ClientRestBackend::Health() {
  if (extra_health_) {
    if (Status st = extra_health_(); !st.ok()) return st;
  }
  auto cluster = client_.ClusterStatus();
  if (!cluster.ok()) {
    return Error(cluster.code(), "master unreachable: " + cluster.status().message());
  }
  return Status::Ok();
}

std::string ClientRestBackend::MetricsText() {
  const Client::PathCounts p = client_.path_counts();
  std::string out =
      "# HELP client_transfer_ops_total Transfer ops this client moved, by path\n"
      "# TYPE client_transfer_ops_total counter\n";
  for (auto [path, n] : {std::pair{"same_host", p.same_host}, std::pair{"rdma", p.rdma},
                         std::pair{"tcp", p.tcp}, std::pair{"tcp_fallback", p.tcp_fallback}}) {
    out += std::string("client_transfer_ops_total{path=\"") + path + "\"} " + std::to_string(n) +
           "\n";
  }
  return out;
}

std::string ClientRestBackend::SummaryText() {
  const Client::PathCounts p = client_.path_counts();
  return "client " + client_.id().ToString() + ": transfer ops same-host " + std::to_string(p.same_host) + ", rdma " +
         std::to_string(p.rdma) + ", tcp " + std::to_string(p.tcp) + " (fallback " +
         std::to_string(p.tcp_fallback) + "); last path " + client_.last_transfer_path() + "\n";
}

}  // namespace mc::client
