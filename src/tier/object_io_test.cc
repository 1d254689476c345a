#include "tier/object_io.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace mc::tier {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kChunk = 2 * kBlockBytes;  // objects of a few blocks take several chunks

struct File {
  std::string path;
  int fd = -1;
  File() {
    std::string tmpl = (fs::temp_directory_path() / "mc-object-io-XXXXXX").string();
    fd = mkstemp(tmpl.data());
    REQUIRE(fd >= 0);
    path = tmpl;
  }
  ~File() {
    close(fd);
    unlink(path.c_str());
  }
};

// Block-aligned memory, handed out at `shift` bytes past a block boundary.
struct Memory {
  uint8_t* base = nullptr;
  uint8_t* at = nullptr;
  Memory(uint64_t bytes, uint64_t shift) {
    void* p = nullptr;
    REQUIRE(posix_memalign(&p, kBlockBytes, bytes + shift + kBlockBytes) == 0);
    base = static_cast<uint8_t*>(p);
    at = base + shift;
  }
  ~Memory() { std::free(base); }
};

std::unique_ptr<ObjectIo> Lane(uint32_t depth, bool uring) {
  auto io = ObjectIo::Make({depth, kChunk, uring});
  REQUIRE(io.ok());
  if (!uring) CHECK(!(*io)->uring());
  return std::move(*io);
}

TEST_CASE("objects move in chunks and read back byte for byte, aligned or not, either engine") {
  const std::vector<uint64_t> sizes = {0, 1, 4095, 4096, kChunk, kChunk + 5, 5 * kChunk + 100};
  std::mt19937 rng(7);
  for (bool uring : {true, false}) {
    for (uint32_t depth : {1u, 2u, 3u}) {
      for (uint64_t shift : {uint64_t{0}, uint64_t{64}}) {
        auto lane = Lane(depth, uring);
        for (uint64_t size : sizes) {
          CAPTURE(uring); CAPTURE(depth); CAPTURE(shift); CAPTURE(size);
          File f;
          Memory src(size, shift), dst(size, shift == 0 ? 64 : 0);  // the other alignment back
          for (uint64_t i = 0; i < size; ++i) src.at[i] = static_cast<uint8_t>(rng());
          const ObjectHeader h{"key/" + std::to_string(size), size, 9, 0};
          REQUIRE(lane->Write(f.fd, h, src.at).ok());
          CHECK(fs::file_size(f.path) == h.file_bytes());
          REQUIRE(lane->Read(f.fd, h, dst.at).ok());
          CHECK((size == 0 || std::memcmp(src.at, dst.at, size) == 0));
          // The other engine reads what this one wrote.
          std::memset(dst.at, 0, size);
          REQUIRE(Lane(2, !uring)->Read(f.fd, h, dst.at).ok());
          CHECK((size == 0 || std::memcmp(src.at, dst.at, size) == 0));
        }
      }
    }
  }
}

TEST_CASE("a bounced write starts with a short chunk and reads back whole at the store's shape") {
  std::mt19937 rng(11);
  for (bool uring : {true, false}) {
    auto lane = ObjectIo::Make({4, 1ull << 20, uring});  // the store's default shape
    REQUIRE(lane.ok());
    for (uint64_t size : {uint64_t{100000}, uint64_t{(256u << 10) + 1}, uint64_t{(3u << 20) + 123}}) {
      CAPTURE(uring); CAPTURE(size);
      File f;
      Memory src(size, 64), dst(size, 64);
      for (uint64_t i = 0; i < size; ++i) src.at[i] = static_cast<uint8_t>(rng());
      const ObjectHeader h{"big", size, 3, 0};
      REQUIRE((*lane)->Write(f.fd, h, src.at).ok());
      CHECK(fs::file_size(f.path) == h.file_bytes());
      REQUIRE((*lane)->Read(f.fd, h, dst.at).ok());
      CHECK(std::memcmp(src.at, dst.at, size) == 0);
      Memory straight(size, 0);  // and read without the bounce chunks
      REQUIRE((*lane)->Read(f.fd, h, straight.at).ok());
      CHECK(std::memcmp(src.at, straight.at, size) == 0);
    }
  }
}

TEST_CASE("a bounced chunk is copied while depth chunks of its object are in the ring") {
  // One bounce chunk more than the depth: a write copies chunk i while
  // chunks i - depth .. i - 1 are queued, a read copies chunk i out while
  // i + 1 .. i + depth are; only the first (write) or last (read) `depth`
  // chunks of an object see a shorter queue.
  constexpr uint64_t kChunks = 6;
  for (bool uring : {true, false}) {
    for (uint32_t depth : {1u, 2u, 4u}) {
      CAPTURE(uring); CAPTURE(depth);
      auto lane = Lane(depth, uring);
      File f;
      Memory src(kChunks * kChunk, 64), dst(kChunks * kChunk, 64);
      std::memset(src.at, 0x4c, kChunks * kChunk);
      const ObjectHeader h{"queued", kChunks * kChunk, 1, 0};
      REQUIRE(lane->Write(f.fd, h, src.at).ok());
      CHECK(lane->stats().bounced_chunks == kChunks);
      CHECK(lane->stats().copies_behind_full_queue == kChunks - depth);
      REQUIRE(lane->Read(f.fd, h, dst.at).ok());
      CHECK(std::memcmp(src.at, dst.at, kChunks * kChunk) == 0);
      CHECK(lane->stats().bounced_chunks == 2 * kChunks);
      CHECK(lane->stats().copies_behind_full_queue == 2 * (kChunks - depth));
      Memory aligned(kChunks * kChunk, 0);  // page-aligned memory is never copied
      REQUIRE(lane->Read(f.fd, h, aligned.at).ok());
      CHECK(lane->stats().bounced_chunks == 2 * kChunks);
    }
  }
}

TEST_CASE("a read refuses a flipped data byte, another generation and a file cut short") {
  auto lane = Lane(2, true);
  File f;
  Memory src(3 * kChunk, 0), dst(3 * kChunk, 0);
  std::memset(src.at, 0x5a, 3 * kChunk);
  const ObjectHeader h{"k", 3 * kChunk, 4, 0};
  REQUIRE(lane->Write(f.fd, h, src.at).ok());
  CHECK(lane->Read(f.fd, ObjectHeader{"k", 3 * kChunk, 5, 0}, dst.at).code() ==
        ErrorCode::CHECKSUM_MISMATCH);
  CHECK(lane->Read(f.fd, ObjectHeader{"j", 3 * kChunk, 4, 0}, dst.at).code() ==
        ErrorCode::CHECKSUM_MISMATCH);
  const uint8_t flipped = 0x5b;
  REQUIRE(pwrite(f.fd, &flipped, 1, static_cast<off_t>(h.data_offset() + 2 * kChunk + 7)) == 1);
  CHECK(lane->Read(f.fd, h, dst.at).code() == ErrorCode::CHECKSUM_MISMATCH);
  REQUIRE(ftruncate(f.fd, static_cast<off_t>(h.data_offset() + kChunk)) == 0);
  CHECK(lane->Read(f.fd, h, dst.at).code() == ErrorCode::FILE_READ_FAIL);
  // The lane is whole after the failures.
  REQUIRE(lane->Write(f.fd, h, src.at).ok());
  CHECK(lane->Read(f.fd, h, dst.at).ok());
}

TEST_CASE("the crash point runs once the first chunk is on the file and before the header") {
  for (bool uring : {true, false}) {
    CAPTURE(uring);
    auto lane = Lane(3, uring);
    File f;
    Memory src(4 * kChunk, 64);
    std::memset(src.at, 0x33, 4 * kChunk);
    const ObjectHeader h{"paused", 4 * kChunk, 1, 0};
    int runs = 0;
    auto hook = [&] {
      ++runs;
      std::vector<uint8_t> got(kChunk), head(kBlockBytes);
      CHECK(pread(f.fd, got.data(), kChunk, static_cast<off_t>(h.data_offset())) ==
            static_cast<ssize_t>(kChunk));
      CHECK(got == std::vector<uint8_t>(kChunk, 0x33));
      const ssize_t n = pread(f.fd, head.data(), head.size(), 0);
      CHECK(!DecodeHeader(head.data(), n < 0 ? 0 : static_cast<size_t>(n)).ok());
    };
    REQUIRE(lane->Write(f.fd, h, src.at, hook).ok());
    CHECK(runs == 1);
  }
}

TEST_CASE("a shape out of bounds is refused") {
  CHECK(ObjectIo::Make({0, kChunk, true}).code() == ErrorCode::INVALID_PARAMS);
  CHECK(ObjectIo::Make({4, kBlockBytes + 1, true}).code() == ErrorCode::INVALID_PARAMS);
  CHECK(ObjectIo::Make({1000, kChunk, true}).code() == ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace mc::tier
