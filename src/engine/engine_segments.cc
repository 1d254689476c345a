// mooncake::Store's extra segments: memory this process adds to the pool
// after setup (allocate_and_mount_segment) and the unmount of any segment
// it serves (unmount_segment, unmount_and_free_segment).
#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/ceilings.h"
#include "common/log.h"
#include "engine/engine_impl.h"

namespace mooncake {

using namespace internal;

namespace {

// Mount attempts of a segment (then setup or the call fails).
constexpr int kMountAttempts = 5;
// The longest grace an unmount waits before the segment leaves.
constexpr uint64_t kMaxGracePeriodSeconds = 3600;
// The reference's data ports, and how many of them are tried.
constexpr uint16_t kFirstRefPort = 12300;
constexpr uint16_t kLastRefPort = 14300;
constexpr int kRefPortAttempts = 16;

}  // namespace

namespace {

mc::Result<std::unique_ptr<mc::store::SegmentHost>> CreateHost(const mc::Config& config,
                                                               mc::msg::ClientId id,
                                                               bool port_is_a_name) {
  if (config.store.port != 0) {
    auto made = mc::store::SegmentHost::Create(config, id);
    if (made.ok() || !port_is_a_name ||
        made.status().message().find("in use") == std::string::npos) {
      return made;
    }
    // The reference's transfer engine does not listen on local_hostname's
    // port (it names the segment), so two of its stores in one process may
    // give the same one; a segment name must be unique here.
    MC_LOG(WARN) << "setup: local_hostname's port " << config.store.port
                 << " is in use, so the segment serves on another port of " << kFirstRefPort
                 << ".." << kLastRefPort << " and is named after it (get_hostname() says which)";
  }
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(kFirstRefPort, kLastRefPort);
  mc::Config c = config;
  for (int i = 0; i < kRefPortAttempts; ++i) {
    c.store.port = static_cast<uint16_t>(pick(rng));
    auto made = mc::store::SegmentHost::Create(c, id);
    // Only a port in use is worth another try.
    if (made.ok() || made.status().message().find("data server") == std::string::npos) return made;
  }
  c.store.port = 0;  // any free port
  return mc::store::SegmentHost::Create(c, id);
}

}  // namespace

mc::Result<std::unique_ptr<mc::store::SegmentHost>> internal::StartHost(const mc::Config& config,
                                                                        mc::msg::ClientId id,
                                                                        bool port_is_a_name) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<mc::store::SegmentHost> h,
                      CreateHost(config, id, port_is_a_name));
  int attempts = 0;
  auto mounted = h->Mount([&attempts](uint64_t ms) {
    if (++attempts >= kMountAttempts) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return false;
  });
  if (!mounted.ok()) return mounted.status();
  if (!*mounted) return mc::Error(mc::ErrorCode::RPC_FAIL, "cannot mount the segment");
  h->Start();
  return h;
}

int Store::AllocateAndMountSegment(size_t size, const std::string& protocol,
                                   std::vector<std::string>* segment_ids,
                                   size_t* allocated_bytes) {
  segment_ids->clear();
  *allocated_bytes = 0;
  MC_ENGINE_CLIENT(kInvalidParams);
  // A dummy's memory is its pool; segments are the standalone client's.
  if (impl_->dummy != nullptr) return kNotSupported;
  if (size == 0 || size > mc::kMaxSegmentBytes) return kInvalidParams;
  mc::Config config = impl_->resolved;
  if (!protocol.empty() && protocol != config.cluster.protocol) {
    // One transport per process: the one setup chose.
    MC_LOG(ERROR) << "allocate_and_mount_segment: protocol '" << protocol
                  << "' differs from setup's '" << config.cluster.protocol << "'";
    return protocol == "tcp" || protocol == "rdma" ? kNotSupported : kInvalidParams;
  }
  config.store.global_segment_size_bytes = size;
  config.store.port = 0;  // each segment has a data port of its own
  auto made = StartHost(config, cl.id());
  if (!made.ok()) {
    MC_LOG(ERROR) << "allocate_and_mount_segment: " << made.status().ToString();
    return Code(made.status());
  }
  std::unique_ptr<mc::store::SegmentHost> h = std::move(*made);
  MC_LOG(INFO) << "this process contributes another segment " << h->Describe();
  segment_ids->push_back(h->name());
  *allocated_bytes = h->size_bytes();
  std::lock_guard lock(impl_->hosts_mu);
  const std::string name = h->name();
  impl_->hosts.emplace(name, std::move(h));
  return kOk;
}

int Store::UnmountSegment(const std::vector<std::string>& segment_ids,
                          uint64_t grace_period_seconds) {
  MC_ENGINE_CLIENT(kInvalidParams);
  if (segment_ids.empty() || grace_period_seconds > kMaxGracePeriodSeconds) return kInvalidParams;
  std::vector<std::unique_ptr<mc::store::SegmentHost>> taken;
  {
    std::lock_guard lock(impl_->hosts_mu);
    for (const auto& id : segment_ids) {
      if (impl_->hosts.count(id) == 0) return kSegmentNotFound;
    }
    for (const auto& id : segment_ids) {
      auto it = impl_->hosts.find(id);
      if (it == impl_->hosts.end()) continue;  // named twice
      taken.push_back(std::move(it->second));
      impl_->hosts.erase(it);
    }
  }
  // The grace lets reads granted before the call finish; the segment is
  // already out of this store's list, so no new call sees it here.
  if (grace_period_seconds > 0) std::this_thread::sleep_for(std::chrono::seconds(grace_period_seconds));
  for (auto& h : taken) h->Stop();
  cl.ForgetLocations();  // no direct read of the memory that left
  return kOk;
}

int Store::UnmountLocalDiskSegment(uint64_t grace_period_seconds) {
  MC_ENGINE_CLIENT(-1);
  (void)cl;
  if (grace_period_seconds > kMaxGracePeriodSeconds) return kInvalidParams;
  std::lock_guard lock(impl_->hosts_mu);
  for (const auto& [name, h] : impl_->hosts) {
    if (h->has_disk_tier()) {
      MC_LOG(ERROR) << "unmount_local_disk_segment: segment " << name
                    << " has a disk tier, and draining it while this process runs is not built"
                       " (close() takes the segment and its tier out together)";
      return kNotSupported;
    }
  }
  MC_LOG(WARN) << "unmount_local_disk_segment: no segment of this process has a disk tier"
                  " (enable_ssd_offload): nothing to drain";
  return kOk;
}

uint64_t Store::OffloadReadCount() {
  MC_ENGINE_CLIENT(0);
  return cl.staged_reads();
}

}  // namespace mooncake
