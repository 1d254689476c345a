#include "client/dummy_puts.h"

namespace mc::client {

msg::DummyDirectPutsReply DirectPutsSettings(const Config& config) {
  msg::DummyDirectPutsReply s;
  if (config.cluster.protocol == "rdma") return s;  // the NICs are the standalone client's
  s.master = config.cluster.master;
  s.local_hostname = config.cluster.local_hostname;
  s.auth_token = config.cluster.auth_token;
  s.shm = config.cluster.shm;
  s.rpc_timeout_us = config.cluster.rpc_timeout_us;
  s.rpc_retries = config.cluster.rpc_retries;
  s.tcp_streams = config.client.tcp_streams;
  s.transfer_timeout_us = config.client.transfer_timeout_us;
  s.tls_cert = config.tls.cert;
  s.tls_key = config.tls.key;
  s.tls_ca = config.tls.ca;
  s.tls_min_version = config.tls.min_version;
  s.tls_verify_peer = config.tls.verify_peer;
  return s;
}

Config DirectPutsConfig(const msg::DummyDirectPutsReply& s) {
  Config c;
  c.cluster.master = s.master;
  c.cluster.local_hostname = s.local_hostname;
  c.cluster.protocol = "tcp";
  c.cluster.auth_token = s.auth_token;
  c.cluster.shm = s.shm;
  c.cluster.rpc_timeout_us = s.rpc_timeout_us;
  c.cluster.rpc_retries = s.rpc_retries;
  c.client.tcp_streams = s.tcp_streams;
  c.client.transfer_timeout_us = s.transfer_timeout_us;
  c.tls.cert = s.tls_cert;
  c.tls.key = s.tls_key;
  c.tls.ca = s.tls_ca;
  c.tls.min_version = s.tls_min_version;
  c.tls.verify_peer = s.tls_verify_peer;
  return c;
}

Result<std::unique_ptr<DummyPuts>> DummyPuts::Create() {
  MC_ASSIGN_OR_RETURN(auto journal, DummyJournal::Create());
  return std::unique_ptr<DummyPuts>(new DummyPuts(std::move(journal)));
}

Status DummyPuts::Connect(const msg::DummyDirectPutsReply& settings) {
  std::lock_guard lock(mu_);
  if (client_ != nullptr) return Status::Ok();
  if (settings.master.empty()) {
    return Error(ErrorCode::NOT_SUPPORTED, "the standalone client puts for its dummies");
  }
  MC_ASSIGN_OR_RETURN(client_, Client::Connect(DirectPutsConfig(settings)));
  journal_->set_owner(client_->id());
  return Status::Ok();
}

bool DummyPuts::connected() const {
  std::lock_guard lock(mu_);
  return client_ != nullptr;
}

std::optional<std::vector<Status>> DummyPuts::Put(const std::vector<std::string>& keys,
                                                  const std::vector<Client::ConstParts>& parts,
                                                  const msg::PutOptions& options) {
  std::lock_guard lock(mu_);
  if (client_ == nullptr || !journal_->Begin(keys)) return std::nullopt;
  std::vector<Status> out = client_->BatchPutParts(keys, parts, options);
  journal_->End();
  return out;
}

Client::PathCounts DummyPuts::path_counts() const {
  std::lock_guard lock(mu_);
  return client_ != nullptr ? client_->path_counts() : Client::PathCounts{};
}

std::string DummyPuts::last_transfer_path() const {
  std::lock_guard lock(mu_);
  return client_ != nullptr ? client_->last_transfer_path() : "tcp";
}

}  // namespace mc::client
