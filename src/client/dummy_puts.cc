#include "client/dummy_puts.h"

namespace mc::client {

namespace {

// Each setting a dummy takes over: f(the config's field, the message's).
template <typename C, typename S, typename F>
void EachSetting(C& c, S& s, F&& f) {
  f(c.cluster.master, s.master);
  f(c.cluster.local_hostname, s.local_hostname);
  f(c.cluster.auth_token, s.auth_token);
  f(c.cluster.shm, s.shm);
  f(c.cluster.rpc_timeout_us, s.rpc_timeout_us);
  f(c.cluster.rpc_retries, s.rpc_retries);
  f(c.client.tcp_streams, s.tcp_streams);
  f(c.client.transfer_timeout_us, s.transfer_timeout_us);
  f(c.tls.cert, s.tls_cert);
  f(c.tls.key, s.tls_key);
  f(c.tls.ca, s.tls_ca);
  f(c.tls.min_version, s.tls_min_version);
  f(c.tls.verify_peer, s.tls_verify_peer);
}

}  // namespace

msg::DummyDirectPutsReply DirectPutsSettings(const Config& config) {
  msg::DummyDirectPutsReply s;
  if (config.cluster.protocol == "rdma") return s;  // the NICs are the standalone client's
  EachSetting(config, s, [](const auto& from, auto& to) { to = from; });
  return s;
}

Config DirectPutsConfig(const msg::DummyDirectPutsReply& s) {
  Config c;
  c.cluster.protocol = "tcp";
  EachSetting(c, s, [](auto& to, const auto& from) { to = from; });
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
