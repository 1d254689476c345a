// FakeTransport: an in-memory Transport for unit tests of code that moves
// bytes (the client's data path, FallbackTransport). Stores are byte arrays
// named by their endpoint ("host:port"), shared by every FakeTransport made
// over the same FakeStores, as a store's segment is shared by TCP, shm and
// RDMA. Failures are injected per endpoint: unreachable (as TCP reports a
// peer that does not answer), refusing with a code (e.g. NOT_SUPPORTED for
// a store that serves no RDMA). Grants are not checked. Thread-safe.
#pragma once

#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "transfer/transport.h"

namespace mc::transfer::testing {

class FakeStores {
 public:
  void Add(const std::string& endpoint, size_t size_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_[endpoint].assign(size_bytes, 0);
  }
  std::vector<uint8_t> Bytes(const std::string& endpoint) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bytes_.find(endpoint);
    return it == bytes_.end() ? std::vector<uint8_t>{} : it->second;
  }
  Status Move(const TransferOp& op) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bytes_.find(Key(*op.endpoint));
    if (it == bytes_.end()) return Error(ErrorCode::TRANSFER_FAIL, "no store " + Key(*op.endpoint));
    std::vector<uint8_t>& seg = it->second;
    if (op.remote_offset > seg.size() || op.len > seg.size() - op.remote_offset) {
      return Error(ErrorCode::INVALID_PARAMS, "op outside the segment");
    }
    uint8_t* remote = seg.data() + op.remote_offset;
    if (op.kind == OpKind::kWrite) std::memcpy(remote, op.buffer, op.len);
    else std::memcpy(op.buffer, remote, op.len);
    return Status::Ok();
  }
  static std::string Key(const Endpoint& ep) { return ep.host + ":" + std::to_string(ep.port); }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<uint8_t>> bytes_;
};

class FakeTransport final : public Transport {
 public:
  FakeTransport(std::string name, FakeStores* stores) : name_(std::move(name)), stores_(stores) {}

  std::string_view name() const override { return name_; }

  Status Batch(std::span<TransferOp> ops) override {
    MC_RETURN_IF_ERROR(ValidateBatch(ops));
    std::lock_guard<std::mutex> lock(mu_);
    ++batches_;
    Status first;
    for (TransferOp& op : ops) {
      const std::string key = FakeStores::Key(*op.endpoint);
      ++tried_[key];
      op.peer_unreachable = unreachable_.count(key) > 0;
      auto refused = refuse_.find(key);
      if (op.peer_unreachable) {
        op.status = Error(ErrorCode::TRANSFER_FAIL, key + " did not answer");
      } else if (refused != refuse_.end()) {
        op.status = Error(refused->second, name_ + " refused by " + key);
      } else {
        op.status = stores_->Move(op);
      }
      if (!op.status.ok() && first.ok()) first = op.status;
    }
    return first;
  }

  Status RegisterBuffer(void* addr, uint64_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    registered_.insert(addr);
    return Status::Ok();
  }
  Status UnregisterBuffer(void* addr) override {
    std::lock_guard<std::mutex> lock(mu_);
    return registered_.erase(addr) ? Status::Ok()
                                   : Error(ErrorCode::INVALID_PARAMS, "buffer not registered");
  }

  // The endpoint does not answer: its ops fail with peer_unreachable.
  void SetUnreachable(const std::string& endpoint) {
    std::lock_guard<std::mutex> lock(mu_);
    unreachable_.insert(endpoint);
  }
  // The endpoint refuses every op with `code`.
  void Refuse(const std::string& endpoint, ErrorCode code) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_[endpoint] = code;
  }
  // The endpoint answers and accepts again.
  void Heal(const std::string& endpoint) {
    std::lock_guard<std::mutex> lock(mu_);
    unreachable_.erase(endpoint);
    refuse_.erase(endpoint);
  }
  // Ops offered for `endpoint` so far (moved or not).
  int tried(const std::string& endpoint) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tried_.find(endpoint);
    return it == tried_.end() ? 0 : it->second;
  }
  int batches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  bool registered(void* addr) const {
    std::lock_guard<std::mutex> lock(mu_);
    return registered_.count(addr) > 0;
  }

 private:
  const std::string name_;
  FakeStores* stores_;
  mutable std::mutex mu_;
  std::set<std::string> unreachable_;
  std::map<std::string, ErrorCode> refuse_;
  std::map<std::string, int> tried_;
  std::set<void*> registered_;
  int batches_ = 0;
};

}  // namespace mc::transfer::testing
