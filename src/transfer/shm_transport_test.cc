#include "transfer/shm_transport.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "transfer/segment.h"
#include "transfer/transfer_test_util.h"

using namespace mc::transfer;
using mc::ErrorCode;
using mc::transfer::testing::RandomBytes;
using mc::transfer::testing::TestSeed;

namespace {

std::unique_ptr<Segment> MakeSegment(uint64_t size, SegmentBacking backing) {
  SegmentOptions opts;
  opts.size_bytes = size;
  opts.backing = backing;
  auto seg = Segment::Create(opts);
  REQUIRE(seg.ok());
  return std::move(*seg);
}

}  // namespace

TEST_CASE("shm writes and reads are byte-identical from 1 byte to 64 MiB, both backings") {
  std::mt19937_64 rng(TestSeed() + 10);
  for (SegmentBacking backing : {SegmentBacking::kMemfd, SegmentBacking::kShmFile}) {
    for (int threads : {1, 2}) {
      auto seg = MakeSegment(96 << 20, backing);
      Endpoint ep;
      ep.shm_path = seg->shm_path();
      ShmTransportOptions opts;
      opts.copy_threads = threads;
      ShmTransport shm(opts);
      for (size_t len : {size_t{1}, size_t{4097}, size_t{(1 << 20) + 5}, size_t{64 << 20}}) {
        CAPTURE(len);
        CAPTURE(threads);
        auto data = RandomBytes(rng, len);
        uint64_t off = rng() % ((96 << 20) - len + 1);
        REQUIRE(shm.Write(ep, off, data.data(), len).ok());
        CHECK(std::memcmp(seg->base() + off, data.data(), len) == 0);
        std::vector<uint8_t> back(len);
        REQUIRE(shm.Read(ep, off, back.data(), len).ok());
        CHECK(back == data);
      }
      shm.Forget(ep.shm_path);
    }
  }
}

TEST_CASE("shm writes reach a segment's last byte when its size is not a multiple of 2 MiB") {
  // Writes map whole 2 MiB regions ahead of the copy; the last region is
  // partial and must be clipped to the segment (a load past it is SIGBUS).
  std::mt19937_64 rng(TestSeed() + 11);
  const uint64_t size = (3 << 20) + 4096;
  auto seg = MakeSegment(size, SegmentBacking::kMemfd);
  Endpoint ep;
  ep.shm_path = seg->shm_path();
  ShmTransport shm;
  auto tail = RandomBytes(rng, 4096 + 7);
  REQUIRE(shm.Write(ep, size - tail.size(), tail.data(), tail.size()).ok());
  CHECK(std::memcmp(seg->base() + size - tail.size(), tail.data(), tail.size()) == 0);
  // Across the boundary of the first two regions, then the whole segment.
  auto across = RandomBytes(rng, 1 << 20);
  REQUIRE(shm.Write(ep, (2 << 20) - 12345, across.data(), across.size()).ok());
  CHECK(std::memcmp(seg->base() + (2 << 20) - 12345, across.data(), across.size()) == 0);
  auto all = RandomBytes(rng, size);
  REQUIRE(shm.Write(ep, 0, all.data(), all.size()).ok());
  CHECK(std::memcmp(seg->base(), all.data(), size) == 0);
}

TEST_CASE("shm writers racing into fresh regions map each region once and land every byte") {
  // Eight threads write 64 KiB pieces into the same three 2 MiB regions of a
  // fresh mapping, all starting together: one thread maps each region, the
  // others load only their own pages, and every piece lands.
  std::mt19937_64 rng(TestSeed() + 12);
  const uint64_t region = 2 << 20, piece = 64 << 10;
  const int threads = 8, regions = 3;
  auto seg = MakeSegment(regions * region, SegmentBacking::kMemfd);
  Endpoint ep;
  ep.shm_path = seg->shm_path();
  ShmTransport shm;
  std::vector<std::vector<uint8_t>> data;
  for (int t = 0; t < threads; ++t) data.push_back(RandomBytes(rng, piece));
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    if (round > 0) shm.Forget(ep.shm_path);  // a fresh mapping, regions unmapped again
    std::atomic<int> ready{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) std::this_thread::yield();
        for (int r = 0; r < regions; ++r) {
          const uint64_t off = r * region + ((t + round) % threads) * (region / threads);
          if (!shm.Write(ep, off, data[t].data(), piece).ok()) failed.fetch_add(1);
        }
      });
    }
    for (auto& th : pool) th.join();
    CHECK(failed.load() == 0);
    CHECK(shm.regions_mapped() == static_cast<uint64_t>(regions * (round + 1)));
    for (int t = 0; t < threads; ++t) {
      for (int r = 0; r < regions; ++r) {
        const uint64_t off = r * region + ((t + round) % threads) * (region / threads);
        CHECK(std::memcmp(seg->base() + off, data[t].data(), piece) == 0);
      }
    }
  }
}

TEST_CASE("shm transports of one process share a segment's mapping and its mapped regions") {
  // A client per thread (mooncake bench) used to map the segment once each
  // and fault every page in once each.
  std::mt19937_64 rng(TestSeed() + 13);
  auto seg = MakeSegment(4 << 20, SegmentBacking::kMemfd);
  Endpoint ep;
  ep.shm_path = seg->shm_path();
  auto first = std::make_unique<ShmTransport>();
  ShmTransport second;
  auto a = RandomBytes(rng, 3 << 20);
  REQUIRE(first->Write(ep, 0, a.data(), a.size()).ok());
  CHECK(first->regions_mapped() == 2);
  REQUIRE(second.Write(ep, 4096, a.data(), a.size()).ok());
  CHECK(second.regions_mapped() == 0);
  CHECK(std::memcmp(seg->base() + 4096, a.data(), a.size()) == 0);
  // The first transport gone, the second keeps the mapping.
  first.reset();
  std::vector<uint8_t> back(a.size());
  REQUIRE(second.Read(ep, 4096, back.data(), back.size()).ok());
  CHECK(back == a);
  // Once no transport maps it, the next mapping is fresh.
  second.Forget(ep.shm_path);
  ShmTransport third;
  REQUIRE(third.Write(ep, 0, a.data(), 4096).ok());
  CHECK(third.regions_mapped() == 1);
}

TEST_CASE("shm refuses out-of-bounds ranges and what the range check denies") {
  auto seg = MakeSegment(1 << 20, SegmentBacking::kMemfd);
  Endpoint ep;
  ep.shm_path = seg->shm_path();
  ShmTransportOptions opts;
  opts.check = [](OpKind op, uint64_t off, uint64_t, const Grant&) -> mc::Status {
    if (op == OpKind::kWrite && off >= 4096) return mc::Error(ErrorCode::INVALID_WRITE, "no");
    return mc::Status::Ok();
  };
  ShmTransport shm(opts);
  std::vector<uint8_t> buf(100, 3);
  CHECK(shm.Write(ep, (1 << 20) - 50, buf.data(), buf.size()).code() == ErrorCode::INVALID_WRITE);
  CHECK(shm.Read(ep, ~0ull - 10, buf.data(), buf.size()).code() == ErrorCode::INVALID_PARAMS);
  CHECK(shm.Write(ep, 8192, buf.data(), buf.size()).code() == ErrorCode::INVALID_WRITE);
  CHECK(seg->base()[8192] == 0);
  CHECK(shm.Write(ep, 0, buf.data(), buf.size()).ok());
  Endpoint missing;
  missing.shm_path = "/dev/shm/mooncake-no-such-segment";
  CHECK(shm.Read(missing, 0, buf.data(), 1).code() == ErrorCode::SEGMENT_NOT_FOUND);
}

TEST_CASE("shm sealed reads succeed while the range is untouched and go stale once it is written") {
  auto seg = MakeSegment(1 << 20, SegmentBacking::kMemfd);
  Endpoint ep;
  ep.shm_path = seg->shm_path();
  ShmTransport shm;
  std::string v1(4096, 'a'), v2(4096, 'b'), got(4096, '\0');
  REQUIRE(shm.Write(ep, 8192, v1.data(), v1.size()).ok());
  TransferOp op;
  op.kind = OpKind::kRead;
  op.endpoint = &ep;
  op.remote_offset = 8192;
  op.buffer = got.data();
  op.len = got.size();
  op.sealed = true;
  REQUIRE(shm.Batch({&op, 1}).ok());
  const uint64_t seal = op.seal;
  CHECK(seal != 0);
  CHECK(got == v1);
  REQUIRE(shm.Batch({&op, 1}).ok());  // with the seal it learnt
  CHECK(op.seal == seal);
  // A second transport (another process's mapping) writes the space anew.
  ShmTransport other;
  REQUIRE(other.Write(ep, 8192 + 1024, v2.data(), 64).ok());
  op.seal = seal;
  CHECK(shm.Batch({&op, 1}).code() == ErrorCode::REPLICA_IS_GONE);
  op.seal = 0;
  REQUIRE(shm.Batch({&op, 1}).ok());
  CHECK(op.seal != seal);
}
