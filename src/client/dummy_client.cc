#include "client/dummy_client.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "client/dummy_direct.h"
#include "client/dummy_puts.h"
#include "client/dummy_wire.h"
#include "client/pool_allocator.h"
#include "common/clock.h"
#include "common/log.h"
#include "msg/dummy_messages.h"
#include "net/unix_socket.h"
#include "proto/dummy_ops.h"

namespace mc::client {

Result<std::string> DummySocketPath(const std::string& server_address) {
  const size_t colon = server_address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : server_address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) == 0 || std::stoul(port) > 65535) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "server_address '" + server_address + "': expected host:port of mooncake client");
  }
  return "@mooncake_client_" + port + ".sock";
}

namespace {

using proto::DummyOp;
using proto::DummyOpTraits;

class DummyClientImpl;

// Pool ranges a call staged outside buffers through; freed when it ends.
class Staging {
 public:
  explicit Staging(PoolAllocator& pool) : pool_(pool) {}
  ~Staging() {
    for (uint64_t off : taken_) pool_.Free(off);
  }
  std::optional<uint64_t> Take(uint64_t n) {
    auto off = pool_.Allocate(n);
    if (off) taken_.push_back(*off);
    return off;
  }

 private:
  PoolAllocator& pool_;
  std::vector<uint64_t> taken_;
};

// A part to copy back after a get: pool offset -> caller memory.
struct CopyBack {
  size_t object = 0;
  uint64_t offset_in_object = 0;
  uint64_t pool_offset = 0;
  std::span<uint8_t> to;
};

class DummyClientImpl final : public DummyClient {
 public:
  explicit DummyClientImpl(const DummyOptions& o) : opt_(o), pool_(o.pool_size_bytes) {}
  ~DummyClientImpl() override {
    std::lock_guard lock(mu_);
    CloseLocked();
    if (base_ != nullptr) ::munmap(base_, size_);
  }

  Status Attach() {
    std::lock_guard lock(mu_);
    return AttachLocked();
  }

  // ---- the pool ----
  void* Alloc(uint64_t n) override {
    auto off = pool_.Allocate(n);
    return off ? static_cast<uint8_t*>(base_) + *off : nullptr;
  }
  bool Free(void* p) override {
    auto off = Offset(p, 0);
    return off && pool_.Free(*off);
  }
  void* pool_base() const override { return base_; }
  uint64_t pool_size_bytes() const override { return size_; }
  std::string hostname() const override {
    std::lock_guard lock(mu_);
    return hostname_;
  }
  msg::ClientId id() const override {
    std::lock_guard lock(mu_);
    return id_;
  }

  // ---- puts and gets ----
  Status Put(const std::string& key, std::span<const uint8_t> value,
             const msg::PutOptions& options) override {
    return PutParts({key}, {ConstParts{value}}, options)[0];
  }
  std::vector<Status> BatchPut(const std::vector<std::string>& keys,
                               const std::vector<std::span<const uint8_t>>& values,
                               const msg::PutOptions& options) override {
    std::vector<ConstParts> parts;
    parts.reserve(values.size());
    for (const auto& v : values) parts.push_back({v});
    return PutParts(keys, parts, options);
  }
  std::vector<Status> BatchPutParts(const std::vector<std::string>& keys,
                                    const std::vector<ConstParts>& parts,
                                    const msg::PutOptions& options) override {
    return PutParts(keys, parts, options);
  }
  Result<uint64_t> GetInto(const std::string& key, std::span<uint8_t> buffer) override {
    return GetParts({key}, {Parts{buffer}})[0];
  }
  std::vector<Result<uint64_t>> BatchGetInto(
      const std::vector<std::string>& keys,
      const std::vector<std::span<uint8_t>>& buffers) override {
    std::vector<Parts> parts;
    parts.reserve(buffers.size());
    for (const auto& b : buffers) parts.push_back({b});
    return GetParts(keys, parts);
  }
  std::vector<Result<uint64_t>> BatchGetIntoParts(const std::vector<std::string>& keys,
                                                  const std::vector<Parts>& parts) override {
    return GetParts(keys, parts);
  }
  Result<std::vector<uint8_t>> Get(const std::string& key) override {
    return std::move(BatchGet({key})[0]);
  }
  std::vector<Result<std::vector<uint8_t>>> BatchGet(
      const std::vector<std::string>& keys) override;

  // ---- metadata ----
  Result<msg::GetReplicaListReply> Locate(const std::string& key) override {
    return Call<DummyOp::kDummyLocate>(msg::DummyKeysRequest{{key}, false});
  }
  Result<bool> Exists(const std::string& key) override { return BatchExists({key})[0]; }
  std::vector<Result<bool>> BatchExists(const std::vector<std::string>& keys) override {
    return Items<bool>(keys.size(), Call<DummyOp::kDummyExists>(msg::DummyKeysRequest{keys, false}));
  }
  Result<uint64_t> Size(const std::string& key) override { return Sizes({key})[0]; }
  Status Remove(const std::string& key, bool force) override {
    return BatchRemove({key}, force)[0];
  }
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force) override {
    auto r = Statuses(keys.size(), Call<DummyOp::kDummyRemove>(msg::DummyKeysRequest{keys, force}));
    for (const std::string& k : keys) direct_.Forget(k);
    return r;
  }
  Result<uint64_t> RemoveAll(bool force) override {
    auto r = Call<DummyOp::kDummyRemoveAll>(msg::RemoveAllRequest{force});
    direct_.Clear();
    if (!r.ok()) return r.status();
    return r->removed;
  }
  Result<msg::ListKeysReply> List(const msg::ListKeysRequest& request) override {
    return Call<DummyOp::kDummyList>(request);
  }
  Result<msg::ClusterStatusReply> ClusterStatus() override {
    return Call<DummyOp::kDummyClusterStatus>(proto::Empty{});
  }
  std::string last_transfer_path() const override {
    if (last_ == Last::kDirectRead) return "same-host";
    if (last_ == Last::kDirectPut) return puts_->last_transfer_path();
    auto r = const_cast<DummyClientImpl*>(this)->Call<DummyOp::kDummyPathCounts>(proto::Empty{});
    return r.ok() ? r->last_path : "tcp";
  }
  PathCounts path_counts() const override {
    auto r = const_cast<DummyClientImpl*>(this)->Call<DummyOp::kDummyPathCounts>(proto::Empty{});
    if (!r.ok()) return {};
    // With the gets this dummy served itself (same-host, DummyDirect) and
    // the puts it made itself (DummyPuts).
    const DummyPuts* puts = nullptr;
    {
      std::lock_guard lock(mu_);
      puts = puts_.get();
    }
    const PathCounts own = puts != nullptr ? puts->path_counts() : PathCounts{};
    return PathCounts{r->same_host + direct_.hits() + own.same_host, r->rdma + own.rdma,
                      r->tcp + own.tcp, r->tcp_fallback + own.tcp_fallback};
  }
  // The standalone client registers the whole pool (RDMA) at attach; other
  // memory is staged through the pool (or written by this dummy's own
  // tcp/same-host puts), so there is nothing to register.
  Status RegisterBuffer(void*, uint64_t) override { return Status::Ok(); }
  Status UnregisterBuffer(void*) override { return Status::Ok(); }

  // ---- replica operations ----
  Result<msg::TaskId> CreateCopyTask(const std::string& key,
                                     const std::vector<std::string>& targets) override {
    return Call<DummyOp::kDummyCreateCopyTask>(msg::CreateCopyTaskRequest{{}, key, targets});
  }
  Result<msg::TaskId> CreateMoveTask(const std::string& key, const std::string& source,
                                     const std::string& target) override {
    return Call<DummyOp::kDummyCreateMoveTask>(
        msg::CreateMoveTaskRequest{{}, key, source, target});
  }
  Status RunTask(const msg::TaskId& task) override {
    auto r = Call<DummyOp::kDummyRunTask>(msg::TaskRequest{{}, task});
    direct_.Clear();
    return r.ok() ? Status::Ok() : r.status();
  }
  Result<msg::TaskInfo> QueryTask(const msg::TaskId& task) override {
    return Call<DummyOp::kDummyQueryTask>(msg::TaskRequest{{}, task});
  }
  Result<std::vector<std::string>> BatchReplicaClear(const std::vector<std::string>& keys,
                                                     const std::string& segment) override {
    auto r = Call<DummyOp::kDummyReplicaClear>(msg::ReplicaClearRequest{{}, keys, segment});
    direct_.Clear();
    if (!r.ok()) return r.status();
    return std::move(r->cleared);
  }
  Result<uint64_t> RemoveByRegex(const std::string& pattern, bool force) override {
    auto r = Call<DummyOp::kDummyRemoveByRegex>(msg::RemoveByRegexRequest{pattern, force});
    direct_.Clear();
    if (!r.ok()) return r.status();
    return r->removed;
  }

 private:
  std::optional<uint64_t> Offset(const void* p, uint64_t n) const {
    const auto* b = static_cast<const uint8_t*>(base_);
    const auto* q = static_cast<const uint8_t*>(p);
    if (b == nullptr || q < b || q >= b + size_) return std::nullopt;
    const uint64_t off = static_cast<uint64_t>(q - b);
    if (n > size_ - off) return std::nullopt;
    return off;
  }

  std::vector<Status> PutParts(const std::vector<std::string>& keys,
                               const std::vector<ConstParts>& parts,
                               const msg::PutOptions& options);
  std::vector<Result<uint64_t>> GetParts(const std::vector<std::string>& keys,
                                         const std::vector<Parts>& parts);
  std::vector<Result<uint64_t>> GetThroughClient(const std::vector<std::string>& keys,
                                                 const std::vector<Parts>& parts);
  // Direct reads of the keys this dummy knows (DummyDirect); false when the
  // standalone client is gone (then nothing was read: the call fails as any).
  bool ReadDirect(const std::vector<std::string>& keys, const std::vector<Parts>& parts,
                  std::vector<bool>* served, std::vector<uint64_t>* sizes);
  void SendAccesses();
  uint64_t Attaches() const {
    std::lock_guard lock(mu_);
    return attaches_;
  }
  std::vector<Result<uint64_t>> Sizes(const std::vector<std::string>& keys) {
    return Items<msg::DummyU64, uint64_t>(
        keys.size(), Call<DummyOp::kDummySize>(msg::DummyKeysRequest{keys, false}));
  }

  template <typename T, typename Out = T, typename Reply>
  static std::vector<Result<Out>> Items(size_t n, Reply&& r) {
    std::vector<Result<Out>> out;
    out.reserve(n);
    Status fail = r.ok() && r->size() != n
                      ? Error(ErrorCode::PROTOCOL_ERROR, "reply of the wrong length")
                      : (r.ok() ? Status::Ok() : r.status());
    for (size_t i = 0; i < n; ++i) {
      if (!fail.ok()) {
        out.emplace_back(fail);
      } else if (!(*r)[i].status.ok()) {
        out.emplace_back((*r)[i].status);
      } else if constexpr (std::is_same_v<T, msg::DummyU64>) {
        out.emplace_back((*r)[i].value.value);
      } else {
        out.emplace_back((*r)[i].value);
      }
    }
    return out;
  }
  static std::vector<Status> Statuses(size_t n, const Result<msg::Batch<Status>>& r) {
    if (r.ok() && r->size() == n) return *r;
    return std::vector<Status>(
        n, r.ok() ? Error(ErrorCode::PROTOCOL_ERROR, "reply of the wrong length") : r.status());
  }

  template <DummyOp op>
  Result<typename DummyOpTraits<op>::Reply> Call(const typename DummyOpTraits<op>::Request& req);
  Status AttachLocked();
  Status ResetDirectLocked();
  // Socket errors only (then the client is gone); others leave puts_on_ off.
  Status StartPutsLocked();
  // The puts this dummy makes itself; nullopt when they go through the
  // standalone client (an upsert, no DummyPuts, keys too many to journal).
  std::optional<std::vector<Status>> PutDirect(const std::vector<std::string>& keys,
                                               const std::vector<ConstParts>& parts,
                                               const msg::PutOptions& options);
  void* MapPool(int fd);
  void CloseLocked() {
    if (sock_ >= 0) ::close(sock_);
    sock_ = -1;
  }
  Status Gone(const Status& why) {
    CloseLocked();
    direct_.Clear();
    const ErrorCode code =
        why.code() == ErrorCode::RPC_TIMEOUT ? ErrorCode::RPC_TIMEOUT : ErrorCode::RPC_FAIL;
    return Error(code, "mooncake client at " + opt_.socket_path + " is gone: " + why.message());
  }

  const DummyOptions opt_;
  PoolAllocator pool_;
  void* base_ = nullptr;  // fixed for the life of this object
  uint64_t size_ = 0;
  mutable std::mutex mu_;  // the connection and what attach learns
  int sock_ = -1;
  uint64_t next_request_ = 1;
  msg::ClientId id_;
  std::string hostname_;
  DummyDirect direct_;  // reads, Learn and Reset under mu_
  uint64_t attaches_ = 0;  // under mu_
  // What moved the last put or get: the standalone client, direct_ alone
  // (a get), or puts_ (a put).
  enum class Last { kClient, kDirectRead, kDirectPut };
  std::atomic<Last> last_{Last::kClient};
  // This dummy's own puts (null: puts go through the standalone client).
  std::unique_ptr<DummyPuts> puts_;  // set at the first attach, under mu_
  bool puts_on_ = false;             // under mu_: this attach's client takes its journal
};

template <DummyOp op>
Result<typename DummyOpTraits<op>::Reply> DummyClientImpl::Call(
    const typename DummyOpTraits<op>::Request& req) {
  using Reply = typename DummyOpTraits<op>::Reply;
  std::lock_guard lock(mu_);
  if (sock_ < 0) MC_RETURN_IF_ERROR(AttachLocked());
  DummyFrame f;
  f.opcode = static_cast<uint16_t>(op);
  f.request_id = next_request_++;
  proto::EncodePayload(req, &f.payload);
  if (f.payload.size() > kMaxDummyPayloadBytes) {
    return Error(ErrorCode::INVALID_PARAMS, "request too large for the dummy protocol");
  }
  if (Status st = SendDummyFrame(sock_, f); !st.ok()) return Gone(st);
  DummyFrame r;
  if (Status st = RecvDummyFrame(sock_, &r); !st.ok()) return Gone(st);
  if (r.fd >= 0) ::close(r.fd);
  if (!r.reply || r.opcode != f.opcode || r.request_id != f.request_id) {
    return Gone(Error(ErrorCode::PROTOCOL_ERROR, "reply to another request"));
  }
  return proto::DecodeReply<Reply>(r.payload, DummyOpTraits<op>::kName);
}

Status DummyClientImpl::AttachLocked() {
  MC_ASSIGN_OR_RETURN(int sock, net::ConnectUnix(opt_.socket_path));
  sock_ = sock;
  if (Status st = net::SetUnixTimeouts(sock_, opt_.call_timeout_us, opt_.call_timeout_us);
      !st.ok()) {
    return Gone(st);
  }
  DummyFrame f;
  f.opcode = static_cast<uint16_t>(DummyOp::kDummyAttach);
  f.request_id = next_request_++;
  proto::EncodePayload(msg::DummyAttachRequest{msg::kDummyProtocolVersion, pool_.size_bytes()},
                       &f.payload);
  if (Status st = SendDummyFrame(sock_, f); !st.ok()) return Gone(st);
  DummyFrame r;
  if (Status st = RecvDummyFrame(sock_, &r); !st.ok()) return Gone(st);
  auto reply = proto::DecodeReply<msg::DummyAttachReply>(r.payload, "DummyAttach");
  if (!reply.ok() || r.fd < 0 || reply->pool_size_bytes != pool_.size_bytes()) {
    if (r.fd >= 0) ::close(r.fd);
    CloseLocked();
    if (!reply.ok()) return reply.status();
    return Error(ErrorCode::PROTOCOL_ERROR, "attach reply without the pool");
  }
  void* at = MapPool(r.fd);
  ::close(r.fd);
  if (at == nullptr) {
    CloseLocked();
    return Error(ErrorCode::INTERNAL_ERROR,
                 std::string("cannot map the dummy pool: ") + std::strerror(errno));
  }
  base_ = at;
  size_ = pool_.size_bytes();
  id_ = reply->client;
  hostname_ = reply->hostname;
  ++attaches_;
  MC_RETURN_IF_ERROR(ResetDirectLocked());
  MC_RETURN_IF_ERROR(StartPutsLocked());
  MC_LOG(INFO) << "dummy client attached to " << opt_.socket_path << " (pool "
               << size_ << " bytes, client " << hostname_ << ")";
  return Status::Ok();
}

// Asks for the forget table (client/dummy_forgets.h) and starts direct
// reads over with it; without one (a standalone client that does not offer
// it) every get goes through the standalone client.
Status DummyClientImpl::ResetDirectLocked() {
  DummyFrame f;
  f.opcode = static_cast<uint16_t>(DummyOp::kDummyForgetTable);
  f.request_id = next_request_++;
  proto::EncodePayload(proto::Empty{}, &f.payload);
  if (Status st = SendDummyFrame(sock_, f); !st.ok()) return Gone(st);
  DummyFrame r;
  if (Status st = RecvDummyFrame(sock_, &r); !st.ok()) return Gone(st);
  const ForgetTable* table = nullptr;
  auto reply = proto::DecodeReply<msg::DummyU64>(r.payload, "DummyForgetTable");
  if (reply.ok() && r.fd >= 0) {
    auto mapped = MapForgetTable(r.fd);
    if (mapped.ok()) {
      table = *mapped;
    } else {
      MC_LOG(WARN) << "dummy direct reads off: " << mapped.status().ToString();
    }
  }
  if (r.fd >= 0) ::close(r.fd);
  direct_.Reset(table);
  return Status::Ok();
}

// The first attach places the pool. A re-attach (a new client process)
// copies what the engine holds in its allocations from the old pool, which
// stays mapped until then, into the new one and maps the new one over the
// same addresses: the engine's pointers and their bytes stay valid.
// Null on failure (errno says why).
void* DummyClientImpl::MapPool(int fd) {
  const uint64_t n = pool_.size_bytes();
  void* fresh = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fresh == MAP_FAILED) return nullptr;
  if (base_ == nullptr) return fresh;
  for (auto [off, len] : pool_.Used()) {
    std::memcpy(static_cast<uint8_t*>(fresh) + off, static_cast<uint8_t*>(base_) + off, len);
  }
  ::munmap(fresh, n);
  void* at = ::mmap(base_, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  return at == MAP_FAILED ? nullptr : at;
}

// Hands the standalone client this dummy's put journal; its answer says how
// to reach the master. Without it (an older client, protocol rdma, a master
// this process cannot reach) puts go through the standalone client.
Status DummyClientImpl::StartPutsLocked() {
  puts_on_ = false;
  if (!direct_.enabled()) return Status::Ok();  // no way to see that the client died
  if (puts_ == nullptr) {
    auto made = DummyPuts::Create();
    if (!made.ok()) {
      MC_LOG(WARN) << "dummy puts go through the client: " << made.status().ToString();
      return Status::Ok();
    }
    puts_ = std::move(*made);
  }
  DummyFrame f;
  f.opcode = static_cast<uint16_t>(DummyOp::kDummyDirectPuts);
  f.request_id = next_request_++;
  f.fd = puts_->journal_fd();
  proto::EncodePayload(proto::Empty{}, &f.payload);
  if (Status st = SendDummyFrame(sock_, f); !st.ok()) return Gone(st);
  DummyFrame r;
  if (Status st = RecvDummyFrame(sock_, &r); !st.ok()) return Gone(st);
  if (r.fd >= 0) ::close(r.fd);
  auto settings = proto::DecodeReply<msg::DummyDirectPutsReply>(r.payload, "DummyDirectPuts");
  Status st = settings.ok() ? puts_->Connect(*settings) : settings.status();
  if (!st.ok()) {
    MC_LOG(INFO) << "dummy puts go through the client: " << st.ToString();
    return Status::Ok();
  }
  puts_on_ = true;
  return Status::Ok();
}

std::optional<std::vector<Status>> DummyClientImpl::PutDirect(
    const std::vector<std::string>& keys, const std::vector<ConstParts>& parts,
    const msg::PutOptions& options) {
  {
    std::lock_guard lock(mu_);
    if (sock_ < 0) {
      if (Status st = AttachLocked(); !st.ok()) return std::vector<Status>(keys.size(), st);
    }
    if (!puts_on_) return std::nullopt;
    // A dead client's dummies fail at once, as every call through it would.
    if (!direct_.owner_alive()) {
      return std::vector<Status>(keys.size(),
                                 Gone(Error(ErrorCode::RPC_FAIL, "its process ended")));
    }
  }
  auto out = puts_->Put(keys, parts, options);
  if (!out) return std::nullopt;
  last_.store(Last::kDirectPut);
  for (const std::string& k : keys) direct_.Forget(k);
  return out;
}

std::vector<Status> DummyClientImpl::PutParts(const std::vector<std::string>& keys,
                                              const std::vector<ConstParts>& parts,
                                              const msg::PutOptions& options) {
  if (keys.size() != parts.size()) {
    return std::vector<Status>(keys.size(),
                               Error(ErrorCode::INVALID_PARAMS, "one object per key"));
  }
  if (!options.upsert) {
    if (auto direct = PutDirect(keys, parts, options)) return std::move(*direct);
  }
  msg::DummyPutRequest req{keys, {}, options, options.placement, options.upsert};
  req.objects.resize(keys.size());
  Staging staging(pool_);
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const auto& p : parts[i]) {
      std::optional<uint64_t> off = p.empty() ? 0 : Offset(p.data(), p.size());
      if (!off) {
        off = staging.Take(p.size());
        if (!off) {
          return std::vector<Status>(
              keys.size(), Error(ErrorCode::NO_AVAILABLE_HANDLE,
                                 "the dummy pool has no room to stage " +
                                     std::to_string(p.size()) + " bytes"));
        }
        std::memcpy(static_cast<uint8_t*>(base_) + *off, p.data(), p.size());
      }
      req.objects[i].parts.push_back({*off, p.size()});
    }
  }
  last_.store(Last::kClient);
  auto out = Statuses(keys.size(), Call<DummyOp::kDummyPut>(req));
  for (const std::string& k : keys) direct_.Forget(k);
  return out;
}

std::vector<Result<uint64_t>> DummyClientImpl::GetParts(const std::vector<std::string>& keys,
                                                        const std::vector<Parts>& parts) {
  if (keys.size() != parts.size()) {
    return std::vector<Result<uint64_t>>(keys.size(),
                                         Error(ErrorCode::INVALID_PARAMS, "one buffer per key"));
  }
  std::vector<bool> served;
  std::vector<uint64_t> sizes;
  if (!ReadDirect(keys, parts, &served, &sizes)) {
    last_.store(Last::kClient);
    return GetThroughClient(keys, parts);
  }
  std::vector<std::string> rest;
  std::vector<Parts> rest_parts;
  std::vector<size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (served[i]) continue;
    rest.push_back(keys[i]);
    rest_parts.push_back(parts[i]);
    index.push_back(i);
  }
  last_.store(rest.empty() ? Last::kDirectRead : Last::kClient);
  std::vector<Result<uint64_t>> out;
  out.reserve(keys.size());
  for (uint64_t n : sizes) out.emplace_back(n);
  if (!rest.empty()) {
    auto got = GetThroughClient(rest, rest_parts);
    for (size_t j = 0; j < index.size(); ++j) out[index[j]] = std::move(got[j]);
  }
  SendAccesses();
  return out;
}

bool DummyClientImpl::ReadDirect(const std::vector<std::string>& keys,
                                 const std::vector<Parts>& parts, std::vector<bool>* served,
                                 std::vector<uint64_t>* sizes) {
  std::lock_guard lock(mu_);
  if (sock_ < 0 || !direct_.enabled()) {
    served->assign(keys.size(), false);
    sizes->assign(keys.size(), 0);
    return true;
  }
  // Bytes of a standalone client that died must not be served: its dummies'
  // calls fail until it is back (mooncake-client(1)).
  if (!direct_.owner_alive()) return false;
  direct_.Read(keys, parts, served, sizes);
  return true;
}

void DummyClientImpl::SendAccesses() {
  std::vector<msg::KeyAccess> due = direct_.DueAccesses(SystemClock::Instance().NowUs());
  for (size_t at = 0; at < due.size(); at += DirectReads::kMaxPendingAccessKeys) {
    const size_t end = std::min(due.size(), at + DirectReads::kMaxPendingAccessKeys);
    msg::DummyAccessReport report;
    report.accesses.assign(std::make_move_iterator(due.begin() + at),
                           std::make_move_iterator(due.begin() + end));
    auto r = Call<DummyOp::kDummyReportAccesses>(report);
    if (!r.ok()) {
      MC_LOG(DEBUG) << "direct-read hits not sent: " << r.status().ToString();
    }
  }
}

std::vector<Result<uint64_t>> DummyClientImpl::GetThroughClient(
    const std::vector<std::string>& keys, const std::vector<Parts>& parts) {
  msg::DummyGetRequest req{keys, {}};
  req.objects.resize(keys.size());
  Staging staging(pool_);
  std::vector<CopyBack> copies;
  for (size_t i = 0; i < parts.size(); ++i) {
    uint64_t at = 0;
    for (const auto& p : parts[i]) {
      std::optional<uint64_t> off = p.empty() ? 0 : Offset(p.data(), p.size());
      if (!off) {
        off = staging.Take(p.size());
        if (!off) {
          return std::vector<Result<uint64_t>>(
              keys.size(), Error(ErrorCode::NO_AVAILABLE_HANDLE,
                                 "the dummy pool has no room to stage " +
                                     std::to_string(p.size()) + " bytes"));
        }
        copies.push_back({i, at, *off, p});
      }
      req.objects[i].parts.push_back({*off, p.size()});
      at += p.size();
    }
  }
  std::vector<Result<uint64_t>> out;
  if (direct_.enabled()) {
    const uint64_t attaches = Attaches();
    auto r = Call<DummyOp::kDummyGetIntoLearn>(req);
    if (r.ok()) {
      std::lock_guard lock(mu_);
      // Locations of a standalone client that has since been replaced are not.
      if (attaches_ == attaches) direct_.Learn(keys, r->locations);
    }
    out = Items<msg::DummyU64, uint64_t>(
        keys.size(), r.ok() ? Result(std::move(r->sizes))
                            : Result<msg::Batch<msg::BatchItem<msg::DummyU64>>>(r.status()));
  } else {
    out = Items<msg::DummyU64, uint64_t>(keys.size(), Call<DummyOp::kDummyGetInto>(req));
  }
  for (const CopyBack& c : copies) {
    if (!out[c.object].ok() || *out[c.object] <= c.offset_in_object) continue;
    const uint64_t n = std::min<uint64_t>(c.to.size(), *out[c.object] - c.offset_in_object);
    std::memcpy(c.to.data(), static_cast<uint8_t*>(base_) + c.pool_offset, n);
  }
  return out;
}

std::vector<Result<std::vector<uint8_t>>> DummyClientImpl::BatchGet(
    const std::vector<std::string>& keys) {
  auto sizes = Sizes(keys);
  std::vector<Result<std::vector<uint8_t>>> out;
  std::vector<std::vector<uint8_t>> bufs(keys.size());
  std::vector<std::string> ask;
  std::vector<Parts> parts;
  std::vector<size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!sizes[i].ok()) continue;
    bufs[i].resize(*sizes[i]);
    ask.push_back(keys[i]);
    parts.push_back({std::span<uint8_t>(bufs[i])});
    index.push_back(i);
  }
  auto got = ask.empty() ? std::vector<Result<uint64_t>>{} : GetParts(ask, parts);
  std::vector<Status> failed(keys.size());
  for (size_t j = 0; j < index.size(); ++j) {
    if (!got[j].ok()) failed[index[j]] = got[j].status();
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!sizes[i].ok()) {
      out.emplace_back(sizes[i].status());
    } else if (!failed[i].ok()) {
      out.emplace_back(failed[i]);
    } else {
      out.emplace_back(std::move(bufs[i]));
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<DummyClient>> DummyClient::Connect(const DummyOptions& options) {
  if (options.pool_size_bytes < kPoolAlignBytes) {
    return Error(ErrorCode::INVALID_PARAMS, "the dummy pool must be at least 4 KiB");
  }
  auto c = std::make_unique<DummyClientImpl>(options);
  MC_RETURN_IF_ERROR(c->Attach());
  return std::unique_ptr<DummyClient>(std::move(c));
}

}  // namespace mc::client
