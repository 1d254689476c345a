#include "bench/target.h"

#include <random>

#include "bench/resp.h"
#include "client/client.h"
#include "rpc/client.h"

namespace mc::bench {

namespace {

// Counts one key's status: not found / already exists are "missing".
void Count(BatchOutcome& out, const Status& st, uint64_t bytes) {
  if (st.ok()) {
    out.AddOk(bytes);
  } else if (st.code() == ErrorCode::OBJECT_NOT_FOUND ||
             st.code() == ErrorCode::OBJECT_ALREADY_EXISTS) {
    out.AddMissing();
  } else {
    out.Fail(st);
  }
}

class MooncakeTarget final : public Target {
 public:
  explicit MooncakeTarget(std::unique_ptr<client::Client> c, uint32_t replicas)
      : client_(std::move(c)) {
    options_.replicas = replicas;
  }

  ~MooncakeTarget() override {
    if (put_registered_ != nullptr) (void)client_->UnregisterBuffer(put_registered_);
    if (get_registered_ != nullptr) (void)client_->UnregisterBuffer(get_registered_);
  }

  BatchOutcome Put(std::span<const std::string> keys, std::span<const uint8_t> value) override {
    BatchOutcome out;
    // protocol rdma: the value is registered once, as an engine registers
    // its KV buffers, so the figure carries no per-op pinning. A no-op on TCP.
    Reregister(const_cast<uint8_t*>(value.data()), value.size(), &put_registered_, &put_len_);
    if (keys.size() == 1) {
      Count(out, client_->Put(keys[0], value, options_), value.size());
      return out;
    }
    keys_.assign(keys.begin(), keys.end());
    values_.assign(keys.size(), value);
    for (const Status& st : client_->BatchPut(keys_, values_, options_)) Count(out, st, value.size());
    return out;
  }

  // Into buffers reused across calls, as an engine reads into its own KV
  // cache: the figure is the store's and the wire's, not the allocator's.
  BatchOutcome Get(std::span<const std::string> keys, uint64_t expect_size) override {
    BatchOutcome out;
    if (buffer_.size() < keys.size() * expect_size) {
      // The registration must go before resize frees the old memory.
      if (get_registered_ != nullptr) (void)client_->UnregisterBuffer(get_registered_);
      get_registered_ = nullptr;
      buffer_.resize(keys.size() * expect_size);
    }
    Reregister(buffer_.data(), buffer_.size(), &get_registered_, &get_len_);
    keys_.assign(keys.begin(), keys.end());
    spans_.clear();
    for (size_t i = 0; i < keys.size(); ++i) spans_.emplace_back(buffer_.data() + i * expect_size, expect_size);
    for (const auto& r : client_->BatchGetInto(keys_, spans_)) {
      if (r.ok() && *r != expect_size) {
        out.Fail(Error(ErrorCode::INVALID_REPLICA, "value of " + std::to_string(*r) +
                                                     " bytes, expected " + std::to_string(expect_size)));
      } else {
        Count(out, r.status(), r.ok() ? *r : 0);
      }
    }
    return out;
  }

  BatchOutcome Exists(std::span<const std::string> keys) override {
    BatchOutcome out;
    auto count = [&](const Result<bool>& r) {
      if (!r.ok()) out.Fail(r.status());
      else if (*r) out.AddOk(0);
      else out.AddMissing();
    };
    if (keys.size() == 1) {
      count(client_->Exists(keys[0]));
      return out;
    }
    keys_.assign(keys.begin(), keys.end());
    for (const auto& r : client_->BatchExists(keys_)) count(r);
    return out;
  }

  std::string transfer_path() const override { return client_->last_transfer_path(); }

 private:
  // Keeps `*reg` (the registered start, length `*len`) covering [addr, addr+size).
  void Reregister(uint8_t* addr, uint64_t size, uint8_t** reg, uint64_t* len) {
    if (size == 0 || (*reg == addr && *len >= size)) return;
    if (*reg != nullptr) (void)client_->UnregisterBuffer(*reg);
    *reg = nullptr;
    if (client_->RegisterBuffer(addr, size).ok()) {
      *reg = addr;
      *len = size;
    }
  }

  std::unique_ptr<client::Client> client_;
  msg::PutOptions options_;
  uint8_t* put_registered_ = nullptr;  // RegisterBuffer'd value, or null
  uint64_t put_len_ = 0;
  uint8_t* get_registered_ = nullptr;  // RegisterBuffer'd buffer_, or null
  uint64_t get_len_ = 0;
  // Reused across calls so the bench adds no per-op allocation of its own.
  std::vector<std::string> keys_;
  std::vector<std::span<const uint8_t>> values_;
  std::vector<std::span<uint8_t>> spans_;
  std::vector<uint8_t> buffer_;
};

class MetadataTarget final : public Target {
 public:
  MetadataTarget(std::unique_ptr<rpc::MasterClient> link, uint64_t value_size, uint32_t replicas)
      : link_(std::move(link)), value_size_(value_size) {
    options_.replicas = replicas;
    std::random_device rd;
    id_ = {(uint64_t(rd()) << 32) | rd(), (uint64_t(rd()) << 32) | rd()};
  }

  BatchOutcome Put(std::span<const std::string> keys, std::span<const uint8_t>) override {
    BatchOutcome out;
    if (keys.size() == 1) {
      auto started = link_->Invoke<proto::Opcode::kPutStart>({id_, keys[0], value_size_, options_});
      if (!started.ok()) {
        Count(out, started.status(), 0);
      } else {
        Count(out, link_->Invoke<proto::Opcode::kPutEnd>({id_, keys[0]}).status(), 0);
      }
      return out;
    }
    msg::Batch<msg::PutStartRequest> start;
    for (const auto& k : keys) start.push_back({id_, k, value_size_, options_});
    auto started = link_->Invoke<proto::Opcode::kBatchPutStart>(start);
    if (!started.ok()) {
      for (size_t i = 0; i < keys.size(); ++i) out.Fail(started.status());
      return out;
    }
    msg::Batch<msg::KeyRequest> end;
    for (size_t i = 0; i < keys.size(); ++i) {
      if ((*started)[i].status.ok()) end.push_back({id_, keys[i]});
      else Count(out, (*started)[i].status, 0);
    }
    if (end.empty()) return out;
    auto ended = link_->Invoke<proto::Opcode::kBatchPutEnd>(end);
    for (size_t i = 0; i < end.size(); ++i) Count(out, ended.ok() ? (*ended)[i] : ended.status(), 0);
    return out;
  }

  BatchOutcome Get(std::span<const std::string> keys, uint64_t) override {
    BatchOutcome out;
    if (keys.size() == 1) {
      Count(out, link_->Invoke<proto::Opcode::kGetReplicaList>({id_, keys[0]}).status(), 0);
      return out;
    }
    auto r = link_->Invoke<proto::Opcode::kBatchGetReplicaList>(KeyBatch(keys));
    for (size_t i = 0; i < keys.size(); ++i) Count(out, r.ok() ? (*r)[i].status : r.status(), 0);
    return out;
  }

  BatchOutcome Exists(std::span<const std::string> keys) override {
    BatchOutcome out;
    auto count = [&](const Status& st, bool present) {
      if (!st.ok()) out.Fail(st);
      else if (present) out.AddOk(0);
      else out.AddMissing();
    };
    if (keys.size() == 1) {
      auto r = link_->Invoke<proto::Opcode::kExistKey>({id_, keys[0]});
      count(r.status(), r.ok() && *r);
      return out;
    }
    auto r = link_->Invoke<proto::Opcode::kBatchExistKey>(KeyBatch(keys));
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!r.ok()) count(r.status(), false);
      else count((*r)[i].status, (*r)[i].value);
    }
    return out;
  }

 private:
  msg::Batch<msg::KeyRequest> KeyBatch(std::span<const std::string> keys) const {
    msg::Batch<msg::KeyRequest> b;
    for (const auto& k : keys) b.push_back({id_, k});
    return b;
  }

  std::unique_ptr<rpc::MasterClient> link_;
  uint64_t value_size_;
  msg::PutOptions options_;
  msg::ClientId id_;
};

// The client's own work up to the wire (building and encoding the master
// request of each call), then nothing: writes are dropped, reads miss.
class BlackholeTarget final : public Target {
 public:
  BatchOutcome Put(std::span<const std::string> keys, std::span<const uint8_t> value) override {
    start_.clear();
    for (const auto& k : keys) start_.push_back({id_, k, value.size(), options_});
    wire_.clear();
    proto::EncodePayload(start_, &wire_);
    BatchOutcome out;
    for (size_t i = 0; i < keys.size(); ++i) out.AddOk(0);
    return out;
  }
  BatchOutcome Get(std::span<const std::string> keys, uint64_t) override { return Miss(keys); }
  BatchOutcome Exists(std::span<const std::string> keys) override { return Miss(keys); }

 private:
  BatchOutcome Miss(std::span<const std::string> keys) {
    lookup_.clear();
    for (const auto& k : keys) lookup_.push_back({id_, k});
    wire_.clear();
    proto::EncodePayload(lookup_, &wire_);
    BatchOutcome out;
    for (size_t i = 0; i < keys.size(); ++i) out.AddMissing();
    return out;
  }

  msg::ClientId id_;
  msg::PutOptions options_;
  msg::Batch<msg::PutStartRequest> start_;
  msg::Batch<msg::KeyRequest> lookup_;
  std::string wire_;
};

class RedisTarget final : public Target {
 public:
  explicit RedisTarget(std::unique_ptr<RespClient> c) : redis_(std::move(c)) {}

  BatchOutcome Put(std::span<const std::string> keys, std::span<const uint8_t> value) override {
    BatchOutcome out;
    Status st = redis_->Set(keys, value);
    for (size_t i = 0; i < keys.size(); ++i) Count(out, st, value.size());
    return out;
  }

  BatchOutcome Get(std::span<const std::string> keys, uint64_t expect_size) override {
    BatchOutcome out;
    auto sizes = redis_->Get(keys, &buffer_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!sizes.ok()) {
        out.Fail(sizes.status());
      } else if ((*sizes)[i] < 0) {
        out.AddMissing();
      } else if (static_cast<uint64_t>((*sizes)[i]) != expect_size) {
        out.Fail(Error(ErrorCode::INVALID_REPLICA, "redis value of unexpected size"));
      } else {
        out.AddOk(expect_size);
      }
    }
    return out;
  }

  BatchOutcome Exists(std::span<const std::string> keys) override {
    BatchOutcome out;
    auto r = redis_->Exists(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!r.ok()) out.Fail(r.status());
      else if ((*r)[i]) out.AddOk(0);
      else out.AddMissing();
    }
    return out;
  }

  bool overwrites() const override { return true; }
  std::string transfer_path() const override { return "tcp"; }

 private:
  std::unique_ptr<RespClient> redis_;
  std::vector<uint8_t> buffer_;
};

}  // namespace

TargetFactory MooncakeTargetFactory(const Config& config) {
  return [config]() -> Result<std::unique_ptr<Target>> {
    MC_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> c, client::Client::Connect(config));
    return std::unique_ptr<Target>(new MooncakeTarget(std::move(c), config.client.replicas));
  };
}

TargetFactory MetadataTargetFactory(const Config& config, uint64_t value_size) {
  return [config, value_size]() -> Result<std::unique_ptr<Target>> {
    rpc::ClientOptions o = client::MasterClientOptions(config.cluster);
    o.max_connections = 1;  // one connection per worker thread: --threads N = N connections
    auto link = std::make_unique<rpc::MasterClient>(o);
    MC_RETURN_IF_ERROR(link->Invoke<proto::Opcode::kClusterStatus>({}).status());
    return std::unique_ptr<Target>(
        new MetadataTarget(std::move(link), value_size, config.client.replicas));
  };
}

TargetFactory BlackholeTargetFactory() {
  return []() -> Result<std::unique_ptr<Target>> { return std::unique_ptr<Target>(new BlackholeTarget()); };
}

TargetFactory RedisTargetFactory(const std::string& host_port, uint64_t timeout_us) {
  return [host_port, timeout_us]() -> Result<std::unique_ptr<Target>> {
    MC_ASSIGN_OR_RETURN(std::unique_ptr<RespClient> c, RespClient::Connect(host_port, timeout_us));
    return std::unique_ptr<Target>(new RedisTarget(std::move(c)));
  };
}

}  // namespace mc::bench
