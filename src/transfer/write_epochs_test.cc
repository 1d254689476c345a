#include "transfer/write_epochs.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_count.h"
#include "common/test_seed.h"

using mc::transfer::EpochWrite;
using mc::transfer::WriteEpochs;

namespace {

struct Table {
  explicit Table(uint64_t bytes)
      : data(bytes), words(WriteEpochs::Words(bytes)), epochs(words.data(), bytes) {}
  std::vector<uint8_t> data;
  std::vector<std::atomic<uint64_t>> words;
  WriteEpochs epochs;
};


}  // namespace

TEST_CASE("a seal changes once any write touches its range and never otherwise") {
  Table t(64 << 10);
  const uint64_t s = t.epochs.Seal(8192, 4096);
  CHECK(s != 0);
  { EpochWrite w(t.epochs, 0, 8192); }         // ends where the range starts
  { EpochWrite w(t.epochs, 12288, 100); }      // starts where it ends
  CHECK(t.epochs.Seal(8192, 4096) == s);
  { EpochWrite w(t.epochs, 8191, 2); }         // one byte of it
  CHECK(t.epochs.Seal(8192, 4096) != s);
}

TEST_CASE("a seal is 0 while a write is in flight in its range") {
  Table t(64 << 10);
  EpochWrite w(t.epochs, 4096, 4096);
  CHECK(t.epochs.Seal(0, 16384) == 0);
  CHECK(t.epochs.Seal(8192, 4096) != 0);
  uint8_t buf[64];
  CHECK(t.epochs.SealedCopy(t.data.data(), 4096, sizeof buf, buf, 0) == 0);
}

TEST_CASE("a sealed copy returns the expected seal only while the bytes are unchanged") {
  Table t(64 << 10);
  std::memset(t.data.data() + 100, 7, 200);
  uint8_t buf[200];
  const uint64_t s = t.epochs.SealedCopy(t.data.data(), 100, sizeof buf, buf, 0);
  REQUIRE(s != 0);
  CHECK(buf[0] == 7);
  CHECK(t.epochs.SealedCopy(t.data.data(), 100, sizeof buf, buf, s) == s);
  {
    EpochWrite w(t.epochs, 250, 10);
    std::memset(t.data.data() + 250, 9, 10);
  }
  CHECK(t.epochs.SealedCopy(t.data.data(), 100, sizeof buf, buf, s) == 0);
}

TEST_CASE("a write that starts while the bytes are being copied makes the copy stale") {
  Table t(64 << 10);
  const uint64_t s = t.epochs.Seal(4096, 4096);
  const uint64_t got = t.epochs.SealedRead(4096, 4096, s, [&] {
    EpochWrite w(t.epochs, 8000, 8);  // lands mid-copy
  });
  CHECK(got == 0);
  CHECK(t.epochs.SealedRead(4096, 4096, 0, [] {}) != s);
}

// The property direct reads rely on, under racing writers that overwrite
// any range at any time: a copy accepted for a seal holds exactly the bytes
// the first accepted copy for that seal held. Every write stamps its range
// with a fresh version, so bytes of another version cannot pass for these.
TEST_CASE("racing writers never let a sealed read return bytes of another version") {
  const uint64_t seed = mc::TestSeed("write epochs race");
  const uint64_t rounds = mc::TestCount("MC_EPOCH_ROUNDS", 20000);
  constexpr uint64_t kBytes = 64 << 10;
  Table t(kBytes);
  std::atomic<uint64_t> next_version{1};
  std::atomic<bool> stop{false};
  auto writer = [&](uint64_t s) {
    std::mt19937_64 rng(s);
    while (!stop.load()) {
      const uint64_t len = 8 * (1 + rng() % 1024);
      const uint64_t off = 8 * (rng() % ((kBytes - len) / 8 + 1));
      const uint64_t version = next_version.fetch_add(1);
      EpochWrite w(t.epochs, off, len);
      for (uint64_t i = 0; i < len; i += 8) std::memcpy(t.data.data() + off + i, &version, 8);
    }
  };
  std::thread w1(writer, seed), w2(writer, seed + 1);
  std::mt19937_64 rng(seed + 2);
  std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, std::string>> seen;
  uint64_t accepted = 0, refused = 0, mismatches = 0;
  std::string buf;
  for (uint64_t r = 0; r < rounds; ++r) {
    const uint64_t len = 8 * (1 + rng() % 1024);
    const uint64_t off = (rng() % 12) * 4096 + 8 * (rng() % 2);  // few ranges: they repeat
    buf.resize(len);
    auto it = seen.find({off, len});
    const uint64_t expect = it == seen.end() ? 0 : it->second.first;
    const uint64_t got = t.epochs.SealedCopy(t.data.data(), off, len, buf.data(), expect);
    if (got == 0) {
      ++refused;
      if (it != seen.end()) seen.erase(it);  // stale: learn the range afresh
      continue;
    }
    ++accepted;
    if (it == seen.end()) {
      seen[{off, len}] = {got, buf};
    } else if (it->second.second != buf) {
      ++mismatches;
    }
  }
  stop.store(true);
  w1.join();
  w2.join();
  MESSAGE("sealed reads: " << accepted << " accepted, " << refused << " refused, "
                           << next_version.load() - 1 << " racing writes");
  CHECK(mismatches == 0);
  CHECK(accepted > 0);
}

TEST_CASE("a retired range changes its seal and takes no new one until writes land on its granules") {
  Table t(64 << 10);
  const uint64_t s = t.epochs.Seal(4096, 8192);
  REQUIRE(s != 0);
  t.epochs.Retire(4096, 6000);  // [4096, 10096): regions 1 and 2, granules up to 10112
  uint8_t buf[64];
  CHECK(t.epochs.SealedCopy(t.data.data(), 4096, sizeof buf, buf, s) == 0);  // stale
  CHECK(t.epochs.Seal(4096, 8192) == 0);  // cannot be learnt
  CHECK(t.epochs.Seal(0, 4096) != 0);     // its neighbours can
  CHECK(t.epochs.Seal(10112, 64) != 0);   // even in its last region
  CHECK(t.epochs.Seal(10048, 64) == 0);   // its last granule
  { EpochWrite w(t.epochs, 4096, 100); }  // the space given out again: two granules
  CHECK(t.epochs.Seal(4096, 128) != 0);
  CHECK(t.epochs.Seal(4096, 4096) == 0);  // the rest of region 1 not written yet
  { EpochWrite w(t.epochs, 4096 + 128, 6000 - 128); }
  CHECK(t.epochs.Seal(4096, 8192) != 0);
}

// The case a per-region mark left open (mooncake-protocol(7), Direct reads):
// a reader whose lease predates a forced remove reads after the retire and
// after a neighbour was written into the same 4 KiB region.
TEST_CASE("a neighbour written into a retired object's 4 KiB region does not make it sealable") {
  Table t(64 << 10);
  t.epochs.Retire(0, 1000);                 // the removed object
  { EpochWrite w(t.epochs, 1024, 1024); }   // a neighbour, on the next granule
  CHECK(t.epochs.Seal(0, 1000) == 0);       // the removed object's reader learns nothing
  CHECK(t.epochs.Seal(1024, 1024) != 0);    // the neighbour's can
  // With the fix switched off (one mark per region, cleared by any write
  // into it), the same steps hand the old object a seal: the hole.
  WriteEpochs::TestingClearWholeRegionsOnWrite(true);
  t.epochs.Retire(0, 1000);
  { EpochWrite w(t.epochs, 1024, 1024); }
  WriteEpochs::TestingClearWholeRegionsOnWrite(false);
  CHECK(t.epochs.Seal(0, 1000) != 0);
}
