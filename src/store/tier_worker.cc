#include "store/tier_worker.h"

#include <climits>
#include <cstdlib>

#include "common/host_identity.h"
#include "common/log.h"
#include "rpc/client.h"
#include "tier/disk_tier.h"
#include "transfer/segment.h"

namespace mc::store {

using proto::Opcode;

TierWorker::TierWorker(msg::ClientId client, rpc::MasterClient& link, transfer::Segment& segment,
                       tier::DiskTier& tier, uint32_t poll_wait_ms)
    : client_(client), link_(link), segment_(segment), tier_(tier),
      disk_id_(DiskId(tier.path())), poll_wait_ms_(poll_wait_ms) {}

TierWorker::~TierWorker() { Stop(); }

std::string TierWorker::DiskId(const std::string& path) {
  char real[PATH_MAX];
  const char* p = ::realpath(path.c_str(), real) != nullptr ? real : path.c_str();
  return HostIdentity() + ":" + p;
}

void TierWorker::Start(const std::string& segment_name) {
  segment_name_ = segment_name;
  thread_ = std::thread([this] { Run(); });
}

void TierWorker::Reannounce(msg::ClientId client) {
  std::lock_guard lock(mu_);
  client_ = client;
  announce_ = true;
  cv_.notify_all();
}

void TierWorker::RequestStop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void TierWorker::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

bool TierWorker::Wait(uint64_t ms) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
}

bool TierWorker::Announce() {
  msg::ClientId client;
  {
    std::lock_guard lock(mu_);
    client = client_;
    announce_ = false;
  }
  const std::vector<tier::DiskObjectInfo> all = tier_.List();
  msg::TierAnnounceRequest req{client, segment_name_, disk_id_, tier_.counters().capacity_bytes};
  size_t at = 0, dropped = 0;
  do {
    req.objects.clear();
    for (; at < all.size() && req.objects.size() < msg::kMaxTierAnnounceObjects; ++at)
      req.objects.push_back({all[at].key, all[at].size_bytes, all[at].generation});
    req.last = at == all.size();
    auto reply = link_.Invoke<Opcode::kTierAnnounce>(req);
    if (!reply.ok()) {
      std::lock_guard lock(mu_);
      announce_ = true;
      if (reply.code() == ErrorCode::NOT_SUPPORTED) {
        if (!told_unsupported_)
          MC_LOG(INFO) << "disk tier: the master does not use disk tiers (no --enable-offload);"
                          " this store keeps its disk objects and asks again later";
        told_unsupported_ = true;
      } else {
        MC_LOG(WARN) << "disk tier: announcing to the master failed: " << reply.status().ToString();
      }
      return false;
    }
    for (const auto& key : reply->drop_keys) {
      (void)tier_.Remove(key);
      ++dropped;
    }
    req.first = false;
  } while (!req.last);
  told_unsupported_ = false;
  MC_LOG(INFO) << "disk tier: announced " << all.size() << " objects to the master, "
               << dropped << " deleted (no longer recorded there)";
  return true;
}

msg::TierResult TierWorker::Do(const msg::TierWork& w) {
  msg::TierResult r{w.ticket, Status::Ok()};
  const auto kind = static_cast<msg::TierWorkKind>(w.kind);
  if (kind == msg::TierWorkKind::kDelete) {
    Status st = tier_.Remove(w.key);
    if (!st.ok() && st.code() != ErrorCode::OBJECT_NOT_FOUND) r.status = st;
    return r;
  }
  if (w.offset > segment_.size_bytes() || w.size_bytes > segment_.size_bytes() - w.offset) {
    r.status = Error(ErrorCode::INVALID_PARAMS, "work outside the segment");
    return r;
  }
  uint8_t* at = static_cast<uint8_t*>(segment_.base()) + w.offset;
  if (kind == msg::TierWorkKind::kOffload) {
    auto written = tier_.Write(w.key, at, w.size_bytes);
    if (!written.ok()) r.status = written.status();
    return r;
  }
  if (kind != msg::TierWorkKind::kStage) {
    r.status = Error(ErrorCode::NOT_SUPPORTED, "unknown disk-tier work kind");
    return r;
  }
  // Stage: the space is the master's in-flight put; a write into it must
  // count in the write epochs like any other, so no direct reader trusts
  // what it cached of the space before.
  transfer::WriteEpochs& epochs = segment_.epochs();
  if (epochs.valid()) epochs.BeginWrite(w.offset, w.size_bytes);
  auto read = tier_.Read(w.key, at, w.size_bytes);
  if (epochs.valid()) epochs.EndWrite(w.offset, w.size_bytes);
  if (!read.ok()) {
    r.status = read.status();
  } else if (*read != w.size_bytes) {
    r.status = Error(ErrorCode::INVALID_READ, "the disk object's size changed");
  }
  return r;
}

void TierWorker::Run() {
  std::vector<msg::TierResult> results;
  for (;;) {
    bool again;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      again = announce_;
    }
    if (again && !Announce()) {
      if (Wait(kRetryMs)) return;
      continue;
    }
    msg::TierPollRequest req;
    {
      std::lock_guard lock(mu_);
      req.fetch.client = client_;
    }
    req.fetch.segment_name = segment_name_;
    const tier::TierCounters c = tier_.counters();
    req.fetch.used_bytes = c.used_bytes;
    req.fetch.capacity_bytes = c.capacity_bytes;
    req.fetch.results = std::move(results);
    results.clear();
    req.max_wait_ms = poll_wait_ms_;
    auto reply = link_.Invoke<Opcode::kTierPoll>(req);
    if (!reply.ok()) {
      // A restarted master has not heard of this disk yet: announce again.
      if (reply.code() == ErrorCode::SEGMENT_NOT_FOUND) {
        std::lock_guard lock(mu_);
        announce_ = true;
      } else {
        MC_LOG(WARN) << "disk tier: asking the master for work failed: "
                     << reply.status().ToString();
      }
      if (Wait(kRetryMs)) return;
      continue;
    }
    for (const msg::TierWork& w : reply->work) results.push_back(Do(w));
    if (results.empty() && reply->wait_ms > 0 && Wait(reply->wait_ms)) return;
  }
}

}  // namespace mc::store
