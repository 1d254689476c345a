// mooncake::Store as a dummy client of the host's `mooncake client`: the
// Store's calls run unchanged over client::DummyClient, which forwards them
// on the standalone client's Unix socket (mooncake-client(1)); and the
// process's host memory allocator (MooncakeHostMemAllocator).
#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "client/dummy_client.h"
#include "common/log.h"
#include "engine/engine_impl.h"

namespace mooncake {

using namespace internal;

namespace {

// The dummy pools open in this process, newest last: HostMemAlloc takes
// from the newest. Held while a pool is used, so Close cannot unmap it
// under an allocation.
std::mutex g_pools_mu;
std::vector<mc::client::DummyClient*> g_pools;
// HostMemAlloc's memory outside any pool: address -> length.
std::map<void*, size_t> g_anonymous;

constexpr size_t kPageBytes = 4096;

}  // namespace

int Store::Impl::OpenDummy(size_t pool_bytes, const std::string& socket_path) {
  auto d = mc::client::DummyClient::Connect({socket_path, pool_bytes});
  if (!d.ok()) {
    MC_LOG(ERROR) << "setup_dummy: " << d.status().ToString();
    return Code(d.status());
  }
  dummy = d->get();
  pool_base = reinterpret_cast<uintptr_t>(dummy->pool_base());
  pool_size = dummy->pool_size_bytes();
  hostname = dummy->hostname();
  client = std::move(*d);
  std::lock_guard lock(g_pools_mu);
  g_pools.push_back(dummy);
  return kOk;
}

void Store::Impl::ShutDummy() {
  if (dummy == nullptr) return;
  {
    std::lock_guard lock(g_pools_mu);
    g_pools.erase(std::remove(g_pools.begin(), g_pools.end(), dummy), g_pools.end());
  }
  dummy = nullptr;
  pool_base = 0;
  pool_size = 0;
}

int Store::SetupDummy(size_t mem_pool_size, size_t local_buffer_size,
                      const std::string& server_address, const std::string& socket_path) {
  std::unique_lock lock(impl_->state_mu);
  if (impl_->client) {
    MC_LOG(ERROR) << "setup_dummy: this store is already set up; close() it first";
    return kInvalidParams;
  }
  std::string path = socket_path;
  if (path.empty()) {
    auto derived = mc::client::DummySocketPath(server_address);
    if (!derived.ok()) {
      MC_LOG(ERROR) << "setup_dummy: " << derived.status().message();
      return kInvalidParams;
    }
    path = *derived;
  }
  // local_buffer_size is the reference's staging room for put/get of bytes:
  // here it is part of the one pool, used for the same.
  if (mem_pool_size > SIZE_MAX - local_buffer_size) return kInvalidParams;
  return impl_->OpenDummy(mem_pool_size + local_buffer_size, path);
}

uint64_t Store::AllocFromMemPool(size_t size) {
  std::shared_lock lock(impl_->state_mu);
  if (impl_->dummy == nullptr) return 0;
  return reinterpret_cast<uint64_t>(impl_->dummy->Alloc(size));
}

int Store::FreeToMemPool(uint64_t addr) {
  std::shared_lock lock(impl_->state_mu);
  if (impl_->dummy == nullptr) return kInvalidParams;
  return impl_->dummy->Free(reinterpret_cast<void*>(addr)) ? kOk : kInvalidParams;
}

void* HostMemAlloc(size_t size) {
  if (size == 0) return nullptr;
  std::lock_guard lock(g_pools_mu);
  if (!g_pools.empty()) return g_pools.back()->Alloc(size);
  const size_t len = (size + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  g_anonymous[p] = len;
  return p;
}

int HostMemFree(void* ptr) {
  std::lock_guard lock(g_pools_mu);
  if (auto it = g_anonymous.find(ptr); it != g_anonymous.end()) {
    munmap(it->first, it->second);
    g_anonymous.erase(it);
    return 0;
  }
  for (auto* d : g_pools) {
    if (d->Free(ptr)) return 0;
  }
  return -1;
}

}  // namespace mooncake
