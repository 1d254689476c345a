#include "tier/object_io.h"

#include <liburing.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "tier/crc32c.h"

namespace mc::tier {

namespace {

// The header block(s) of the longest key, then one block for a data tail.
constexpr uint64_t kHeadBytes = AlignToBlock(kFixedHeaderBytes + kMaxObjectKeyBytes);
constexpr uint64_t kHeadAreaBytes = kHeadBytes + kBlockBytes;
// The copy and the checksum of a bounced chunk go in steps this size, so
// the second pass reads what the first left in the cache.
constexpr uint64_t kCopyStepBytes = 64u << 10;
constexpr uint32_t kMaxDepth = 64;
// A bounced write's first chunk: the disk waits while the caller copies it,
// so it is short and the disk starts sooner; the rest go in full chunks.
constexpr uint64_t kFirstBounceBytes = 256u << 10;
constexpr uint32_t kMaxSubmitTries = 1000;  // EAGAIN: the kernel is short of memory for a moment

bool BlockAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kBlockBytes == 0; }

uint32_t CopyWithCrc(uint8_t* to, const uint8_t* from, uint64_t n, uint32_t crc) {
  for (uint64_t at = 0; at < n; at += kCopyStepBytes) {
    const uint64_t m = std::min(kCopyStepBytes, n - at);
    crc = Crc32c(crc, from + at, m);
    std::memcpy(to + at, from + at, m);
  }
  return crc;
}

Status IoError(bool write, int err) {
  return Error(write ? ErrorCode::FILE_WRITE_FAIL : ErrorCode::FILE_READ_FAIL,
               std::string(write ? "write: " : "read: ") + std::strerror(err));
}

}  // namespace

struct ObjectIo::Ring {
  io_uring ring{};
  bool fixed = false;  // the bounce chunks and the head area are registered
  ~Ring() { io_uring_queue_exit(&ring); }
};

// One I/O of an object: the header, or a run of its data.
struct ObjectIo::Chunk {
  uint64_t file_offset = 0;
  uint8_t* io = nullptr;   // what the disk reads or writes; null: a slot's, given at submit
  uint64_t io_bytes = 0;   // a block multiple
  uint8_t* user = nullptr;  // the object's bytes it holds (io, or a copy's source/target)
  uint64_t bytes = 0;       // how many of them
  int fixed = -1;           // registered buffer index of `io`, or -1
  uint64_t moved = 0;       // bytes the disk has done (short transfers resume)
  int fd = -1;
  bool write = false, done = false;
  int err = 0;              // errno of a failure
  bool bounced() const { return io != user; }
};

ObjectIo::ObjectIo(const IoShape& shape) : shape_(shape) {}

ObjectIo::~ObjectIo() {
  if (ring_) Drain();
  ring_.reset();
  for (uint8_t* s : slots_) std::free(s);
  std::free(head_);
}

Result<std::unique_ptr<ObjectIo>> ObjectIo::Make(const IoShape& shape) {
  if (shape.depth == 0 || shape.depth > kMaxDepth || shape.chunk_bytes == 0 ||
      shape.chunk_bytes % kBlockBytes != 0)
    return Error(ErrorCode::INVALID_PARAMS,
                 "disk tier: chunks in flight must be 1.." + std::to_string(kMaxDepth) +
                     " and the chunk a positive multiple of " + std::to_string(kBlockBytes) +
                     " bytes");
  std::unique_ptr<ObjectIo> io(new ObjectIo(shape));
  auto alloc = [](uint64_t bytes) {
    void* p = nullptr;
    return posix_memalign(&p, kBlockBytes, bytes) == 0 ? static_cast<uint8_t*>(p) : nullptr;
  };
  io->head_ = alloc(kHeadAreaBytes);
  for (uint32_t i = 0; io->head_ != nullptr && i < shape.depth + 1; ++i) {
    io->slots_.push_back(alloc(shape.chunk_bytes));
    if (io->slots_.back() == nullptr) break;
  }
  if (io->head_ == nullptr || io->slots_.size() != shape.depth + 1 || io->slots_.back() == nullptr)
    return Error(ErrorCode::INTERNAL_ERROR, "disk tier: cannot allocate bounce buffers");
  if (!shape.use_uring) return io;
  auto ring = std::make_unique<Ring>();
  // Room for every data chunk in flight, the header and a data tail.
  if (io_uring_queue_init(shape.depth + 2, &ring->ring, 0) != 0) return io;  // pwrite/pread
  std::vector<iovec> bufs;
  for (uint8_t* s : io->slots_) bufs.push_back({s, shape.chunk_bytes});
  bufs.push_back({io->head_, kHeadAreaBytes});
  // Registration pins the buffers; refused (RLIMIT_MEMLOCK), plain I/O works.
  ring->fixed = io_uring_register_buffers(&ring->ring, bufs.data(),
                                          static_cast<unsigned>(bufs.size())) == 0;
  io->ring_ = std::move(ring);
  return io;
}

Status ObjectIo::Submit(bool write, int fd, Chunk& c) {
  c.write = write;
  c.fd = fd;
  c.done = false;
  if (!ring_) {  // pwrite/pread: done before it returns
    while (c.moved < c.io_bytes && c.err == 0) {
      const ssize_t r = write ? pwrite(fd, c.io + c.moved, c.io_bytes - c.moved,
                                       static_cast<off_t>(c.file_offset + c.moved))
                              : pread(fd, c.io + c.moved, c.io_bytes - c.moved,
                                      static_cast<off_t>(c.file_offset + c.moved));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) c.err = r == 0 ? EIO : errno;
      else c.moved += static_cast<uint64_t>(r);
    }
    c.done = true;
    return Status::Ok();
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
  if (sqe == nullptr)  // the ring holds depth + 2 and never more are in flight
    return Error(ErrorCode::INTERNAL_ERROR, "disk tier: io_uring submission queue full");
  uint8_t* p = c.io + c.moved;
  const auto len = static_cast<unsigned>(c.io_bytes - c.moved);
  const uint64_t off = c.file_offset + c.moved;
  const bool fixed = ring_->fixed && c.fixed >= 0;
  if (write && fixed) io_uring_prep_write_fixed(sqe, fd, p, len, off, c.fixed);
  else if (write) io_uring_prep_write(sqe, fd, p, len, off);
  else if (fixed) io_uring_prep_read_fixed(sqe, fd, p, len, off, c.fixed);
  else io_uring_prep_read(sqe, fd, p, len, off);
  io_uring_sqe_set_data(sqe, &c);
  // The entry is in the submission ring already: a failed enter leaves it
  // there for the next one, so it cannot be called off. Transient refusals
  // are retried; anything else leaves buffers the kernel may still use.
  int r = 0;
  for (uint32_t tries = 0; tries < kMaxSubmitTries; ++tries) {
    r = io_uring_submit(&ring_->ring);
    if (r >= 0 || (r != -EAGAIN && r != -EBUSY && r != -EINTR)) break;
    sched_yield();
  }
  if (r < 0) {
    MC_LOG(ERROR) << "disk tier: io_uring_submit: " << std::strerror(-r);
    std::abort();
  }
  ++in_flight_;
  return Status::Ok();
}

void ObjectIo::ReapOne() {
  io_uring_cqe* cqe = nullptr;
  int r;
  while ((r = io_uring_wait_cqe(&ring_->ring, &cqe)) == -EINTR) {
  }
  if (r < 0) {
    // The ring is broken: nothing more will complete, so the buffers in
    // flight are never safe to reuse. A bug or a dying kernel, not an I/O
    // error to report.
    MC_LOG(ERROR) << "disk tier: io_uring_wait_cqe: " << std::strerror(-r);
    std::abort();
  }
  auto* c = static_cast<Chunk*>(io_uring_cqe_get_data(cqe));
  const int res = cqe->res;
  io_uring_cqe_seen(&ring_->ring, cqe);
  --in_flight_;
  if (res <= 0) {
    c->err = res == 0 ? EIO : -res;  // 0: a read past the end, the file is short
  } else {
    c->moved += static_cast<uint64_t>(res);
    // A short transfer: the rest goes again (Submit marks it not done).
    if (c->moved < c->io_bytes && Submit(c->write, c->fd, *c).ok()) return;
  }
  c->done = true;
}

Status ObjectIo::WaitFor(Chunk& want) {
  while (!want.done) ReapOne();
  return want.err == 0 ? Status::Ok() : IoError(want.write, want.err);
}

void ObjectIo::Drain() {
  while (in_flight_ > 0) ReapOne();
}

std::vector<ObjectIo::Chunk> ObjectIo::Plan(const ObjectHeader& h, uint8_t* user, bool aligned,
                                            bool write) {
  std::vector<Chunk> chunks;
  const uint64_t data_at = h.data_offset();
  const uint64_t straight = aligned ? h.size_bytes / kBlockBytes * kBlockBytes : 0;
  for (uint64_t at = 0; at < straight; at += shape_.chunk_bytes) {
    Chunk c;
    c.file_offset = data_at + at;
    c.user = c.io = user + at;
    c.bytes = c.io_bytes = std::min(shape_.chunk_bytes, straight - at);
    chunks.push_back(c);
  }
  if (straight > 0 && straight < h.size_bytes) {  // the tail's padded block
    Chunk c;
    c.file_offset = data_at + straight;
    c.user = user + straight;
    c.bytes = h.size_bytes - straight;
    c.io = head_ + kHeadBytes;
    c.io_bytes = kBlockBytes;
    c.fixed = HeadIndex();
    chunks.push_back(c);
    return chunks;
  }
  for (uint64_t at = straight; at < h.size_bytes; at += chunks.back().bytes) {
    Chunk c;  // through bounce slot i % slots
    const auto i = static_cast<uint32_t>(chunks.size());
    const auto slot = static_cast<uint32_t>(i % slots_.size());
    c.file_offset = data_at + at;
    c.user = user + at;
    const uint64_t most =
        write && i == 0 ? std::min(shape_.chunk_bytes, kFirstBounceBytes) : shape_.chunk_bytes;
    c.bytes = std::min(most, h.size_bytes - at);
    c.io = slots_[slot];
    c.io_bytes = AlignToBlock(c.bytes);
    c.fixed = static_cast<int>(slot);
    chunks.push_back(c);
  }
  return chunks;
}

ObjectIo::Chunk ObjectIo::HeadChunk(const ObjectHeader& h) {
  Chunk head;
  head.io = head.user = head_;
  head.io_bytes = head.bytes = h.data_offset();
  head.fixed = HeadIndex();
  return head;
}

Status ObjectIo::Write(int fd, ObjectHeader h, const uint8_t* src,
                       const std::function<void()>& after_first_chunk) {
  // Only read from: the plan shares its type with reads.
  std::vector<Chunk> chunks = Plan(h, const_cast<uint8_t*>(src), BlockAligned(src), true);
  uint32_t crc = 0;
  Status st;
  size_t next = 0;  // the chunks before it are done
  for (size_t i = 0; i < chunks.size(); ++i) {
    Chunk& c = chunks[i];
    if (c.bounced()) {
      // Its slot was chunk i - depth - 1's, done before chunk i - 1 went
      // into the ring: the copy runs while the `depth` chunks before it
      // are on their way to the disk.
      if (i - next >= shape_.depth) ++stats_.copies_behind_full_queue;
      ++stats_.bounced_chunks;
      crc = CopyWithCrc(c.io, c.user, c.bytes, crc);
      std::memset(c.io + c.bytes, 0, c.io_bytes - c.bytes);
    }
    // A place in the ring once the chunk `depth` before this one is done.
    while (st.ok() && i - next >= shape_.depth) st = WaitFor(chunks[next++]);
    if (!st.ok()) break;
    st = Submit(true, fd, c);
    if (!st.ok()) break;
    if (!c.bounced()) crc = Crc32c(crc, c.user, c.bytes);  // while the disk writes it
    if (i == 0 && after_first_chunk) {
      st = WaitFor(chunks[next++]);
      if (!st.ok()) break;
      after_first_chunk();
    }
  }
  if (!st.ok()) {
    if (ring_) Drain();
    return st;
  }
  h.data_crc = crc;
  EncodeHeader(h, head_);
  Chunk head = HeadChunk(h);
  st = Submit(true, fd, head);
  for (; next < chunks.size(); ++next) {
    Status done = WaitFor(chunks[next]);
    if (st.ok()) st = done;
  }
  if (ring_) Drain();  // the header, if its submit went through
  if (st.ok()) st = WaitFor(head);
  return st;
}

Status ObjectIo::Read(int fd, const ObjectHeader& expect, uint8_t* dst) {
  std::vector<Chunk> chunks = Plan(expect, dst, BlockAligned(dst), false);
  Chunk head = HeadChunk(expect);
  Status st = Submit(false, fd, head);
  uint32_t crc = 0;
  size_t submitted = 0;
  for (size_t i = 0; st.ok() && i < chunks.size(); ++i) {
    for (; st.ok() && submitted < chunks.size() && submitted < i + shape_.depth; ++submitted)
      st = Submit(false, fd, chunks[submitted]);
    if (st.ok()) st = WaitFor(chunks[i]);
    // Chunk i is in: the next takes its place in the ring (and the slot of
    // chunk i - 1, copied out already) while chunk i is copied out.
    if (st.ok() && submitted < chunks.size() && submitted == i + shape_.depth)
      st = Submit(false, fd, chunks[submitted++]);
    if (!st.ok()) break;
    // In order, while the chunks after it are still on their way.
    const Chunk& c = chunks[i];
    if (c.bounced()) {
      ++stats_.bounced_chunks;
      if (submitted - i - 1 >= shape_.depth) ++stats_.copies_behind_full_queue;
    }
    crc = c.bounced() ? CopyWithCrc(c.user, c.io, c.bytes, crc) : Crc32c(crc, c.user, c.bytes);
  }
  if (ring_) Drain();
  if (st.ok()) st = WaitFor(head);
  if (!st.ok()) return st;
  auto h = DecodeHeader(head_, expect.data_offset());
  // The header must still be the object the caller's index names.
  if (!h.ok() || h->key != expect.key || h->size_bytes != expect.size_bytes ||
      h->generation != expect.generation)
    return Error(ErrorCode::CHECKSUM_MISMATCH, "the file's header is not the object's");
  if (crc != h->data_crc)
    return Error(ErrorCode::CHECKSUM_MISMATCH, "the data fails its checksum");
  return Status::Ok();
}

}  // namespace mc::tier
