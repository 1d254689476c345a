#include "transfer/shm_transport.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <vector>

#include "transfer/segment.h"
#include "transfer/stream_copy.h"

namespace mc::transfer {

namespace {

// Copy pieces are cut at this alignment so threads never share a cache line.
constexpr uint64_t kPieceAlignBytes = 4096;
// Granularity of Mapping::touched, and the page size its loads step by.
constexpr uint64_t kTouchRegionBytes = 2ull << 20;
constexpr uint64_t kTouchStepBytes = 4096;

}  // namespace

ShmTransport::Mapping::~Mapping() {
  if (base != nullptr) munmap(base, size_bytes);
}

ShmTransport::ShmTransport(ShmTransportOptions options)
    : options_(std::move(options)), workers_(std::max(options_.copy_threads - 1, 0)) {
  assert(options_.copy_threads >= 1);
}

ShmTransport::~ShmTransport() = default;

void ShmTransport::Forget(const std::string& shm_path) {
  std::lock_guard<std::mutex> lock(mu_);
  maps_.erase(shm_path);
}

Result<std::shared_ptr<ShmTransport::Mapping>> ShmTransport::Map(const std::string& shm_path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(shm_path);
  if (it != maps_.end()) return it->second;
  if (maps_.size() >= options_.max_mapped_segments) {
    return Error(ErrorCode::NO_AVAILABLE_HANDLE,
                 "already " + std::to_string(maps_.size()) + " segments mapped");
  }
  int fd = open(shm_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return Error(ErrorCode::SEGMENT_NOT_FOUND,
                 "open segment " + shm_path + ": " + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return Error(ErrorCode::SEGMENT_NOT_FOUND, "segment " + shm_path + " is empty");
  }
  auto m = MapFile(fd, st);
  close(fd);  // the mapping keeps the memory alive
  if (!m.ok()) return Error(m.status().code(), m.status().message() + " of " + shm_path);
  maps_[shm_path] = *m;
  return *m;
}

Result<std::shared_ptr<ShmTransport::Mapping>> ShmTransport::MapFile(int fd, const struct stat& st) {
  // Every transport of the process shares one mapping of a file (the same
  // inode, alive while anyone maps it, so its number cannot be reused), so
  // several clients in one process fault its pages in once, not each.
  // Never destroyed: a client torn down during exit may still map.
  static std::mutex& shared_mu = *new std::mutex;
  static auto& shared = *new std::map<std::pair<uint64_t, uint64_t>, std::weak_ptr<Mapping>>;
  const std::pair<uint64_t, uint64_t> key{st.st_dev, st.st_ino};
  std::lock_guard<std::mutex> lock(shared_mu);
  auto found = shared.find(key);
  if (found != shared.end()) {
    std::shared_ptr<Mapping> m = found->second.lock();
    if (m && m->size_bytes == static_cast<uint64_t>(st.st_size)) return m;
  }
  std::erase_if(shared, [](const auto& kv) { return kv.second.expired(); });
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                 0);
  if (p == MAP_FAILED) {
    return Error(ErrorCode::INTERNAL_ERROR, std::string("mmap segment: ") + std::strerror(errno));
  }
  auto m = std::make_shared<Mapping>();
  m->base = static_cast<uint8_t*>(p);
  m->size_bytes = static_cast<uint64_t>(st.st_size);
  m->epochs = EpochsOfMapping(m->base, m->size_bytes, &m->data_bytes);
  if (m->data_bytes == 0) m->data_bytes = m->size_bytes;  // a file without the layout
  const uint64_t regions = (m->size_bytes + kTouchRegionBytes - 1) / kTouchRegionBytes;
  m->claimed = std::make_unique<std::atomic<uint64_t>[]>((regions + 63) / 64);
  m->touched = std::make_unique<std::atomic<uint64_t>[]>((regions + 63) / 64);
  shared[key] = m;
  return m;
}

void ShmTransport::MapPagesForWrite(Mapping& m, uint64_t offset, uint64_t len) {
  if (len == 0) return;
  const auto load_pages = [&m](uint64_t begin, uint64_t end) {
    for (uint64_t p = begin; p < end; p += kTouchStepBytes) {
      (void)*static_cast<volatile const uint8_t*>(m.base + p);
    }
  };
  const uint64_t first = offset / kTouchRegionBytes;
  const uint64_t last = (offset + len - 1) / kTouchRegionBytes;
  for (uint64_t r = first; r <= last; ++r) {
    const uint64_t bit = uint64_t{1} << (r % 64);
    if (m.touched[r / 64].load(std::memory_order_relaxed) & bit) continue;
    const uint64_t begin = r * kTouchRegionBytes;
    const uint64_t end = std::min(begin + kTouchRegionBytes, m.size_bytes);
    if (m.claimed[r / 64].fetch_or(bit, std::memory_order_relaxed) & bit) {
      // Another thread is mapping the region: load our own pages only.
      const uint64_t from = std::max(begin, offset) / kTouchStepBytes * kTouchStepBytes;
      load_pages(from, std::min(end, offset + len));
      continue;
    }
    load_pages(begin, end);
    m.touched[r / 64].fetch_or(bit, std::memory_order_relaxed);
    regions_mapped_.fetch_add(1, std::memory_order_relaxed);
  }
}

Status ShmTransport::Batch(std::span<TransferOp> ops) {
  MC_RETURN_IF_ERROR(ValidateBatch(ops));
  struct Piece {
    uint8_t* dst;
    const uint8_t* src;
    uint64_t len;
    bool into_segment;
  };
  std::vector<Piece> pieces;
  std::vector<std::shared_ptr<Mapping>> held;  // keeps mappings alive during copies
  std::vector<bool> expected;  // per held op: a sealed read that named its seal
  const uint64_t threads = static_cast<uint64_t>(options_.copy_threads);
  for (TransferOp& op : ops) {
    op.status = Status::Ok();
    auto m = Map(op.endpoint->shm_path);
    if (!m.ok()) {
      op.status = m.status();
      continue;
    }
    const uint64_t size = (*m)->data_bytes;
    if (op.remote_offset > size || op.len > size - op.remote_offset) {
      op.status = Error(op.kind == OpKind::kWrite ? ErrorCode::INVALID_WRITE
                                                  : ErrorCode::INVALID_READ,
                        "range at offset " + std::to_string(op.remote_offset) + " length " +
                            std::to_string(op.len) + " is outside segment " +
                            op.endpoint->shm_path + " of " + std::to_string(size) + " bytes");
      continue;
    }
    if (options_.check) {
      op.status = options_.check(op.kind, op.remote_offset, op.len, op.grant);
      if (!op.status.ok()) continue;
    }
    const bool named_seal = op.kind == OpKind::kRead && op.sealed && op.seal != 0;
    if (op.kind == OpKind::kWrite) {
      MapPagesForWrite(**m, op.remote_offset, op.len);
      if ((*m)->epochs.valid()) (*m)->epochs.BeginWrite(op.remote_offset, op.len);
    } else if (op.sealed && !BeginSealedRead(**m, op)) {
      continue;
    }
    uint8_t* remote = (*m)->base + op.remote_offset;
    uint8_t* local = static_cast<uint8_t*>(op.buffer);
    uint8_t* dst = op.kind == OpKind::kWrite ? remote : local;
    const uint8_t* src = op.kind == OpKind::kWrite ? local : remote;
    uint64_t piece = op.len;
    if (threads > 1 && op.len >= options_.split_threshold_bytes) {
      piece = (op.len / threads + kPieceAlignBytes - 1) / kPieceAlignBytes * kPieceAlignBytes;
    }
    for (uint64_t off = 0; off < op.len; off += piece) {
      pieces.push_back({dst + off, src + off, std::min(piece, op.len - off),
                        op.kind == OpKind::kWrite});
    }
    held.push_back(*m);
    expected.push_back(named_seal);
  }
  workers_.ParallelFor(pieces.size(), options_.copy_threads - 1, [&](size_t i) {
    // A put's bytes are not read again by this process: stream them into the
    // segment. A get's land in the caller's buffer, which it reads next.
    const Piece& p = pieces[i];
    if (p.into_segment) {
      StreamCopy(p.dst, p.src, p.len);
    } else {
      std::memcpy(p.dst, p.src, p.len);
    }
  });
  // Every op that got this far holds its mapping in `held`, in op order.
  std::atomic_thread_fence(std::memory_order_acquire);
  size_t h = 0;
  for (TransferOp& op : ops) {
    if (!op.status.ok()) continue;
    Mapping& m = *held[h++];
    if (op.kind == OpKind::kWrite) {
      if (m.epochs.valid()) m.epochs.EndWrite(op.remote_offset, op.len);
    } else if (op.sealed && op.seal != 0 && m.epochs.valid() &&
               m.epochs.Seal(op.remote_offset, op.len) != op.seal) {
      // Written during the copy. A read that named its seal is stale; one
      // that was learning it just learns nothing.
      if (expected[h - 1]) op.status = Stale(op);
      else op.seal = 0;
    }
  }
  for (const TransferOp& op : ops) {
    if (!op.status.ok()) return op.status;
  }
  return Status::Ok();
}

Status ShmTransport::Stale(const TransferOp& op) {
  return Error(ErrorCode::REPLICA_IS_GONE,
               "range at offset " + std::to_string(op.remote_offset) + " of " +
                   op.endpoint->shm_path + " was written since its seal");
}

bool ShmTransport::BeginSealedRead(Mapping& m, TransferOp& op) {
  if (!m.epochs.valid()) {
    // RDMA peers may write this segment one-sided: nothing proves the bytes.
    if (op.seal != 0) {
      op.status = Error(ErrorCode::NOT_SUPPORTED, "segment " + op.endpoint->shm_path +
                                                       " keeps no write epochs");
      return false;
    }
    return true;  // an ordinary read; seal stays 0
  }
  const uint64_t now = m.epochs.Seal(op.remote_offset, op.len);
  if (op.seal == 0) {
    // Learning: an ordinary read that also tells the seal when it can (not
    // while a write is in flight in the range's regions: 0 then).
    op.seal = now;
    return true;
  }
  if (now != op.seal) {
    op.status = Stale(op);
    return false;
  }
  return true;
}

}  // namespace mc::transfer
