// Sealed reads on the data port (READ_SEALED, transfer/write_epochs.h): the
// store answers bytes only when no write touched them since the seal the
// reader names, whichever path wrote (TCP through the store, shm by a
// same-host client), and a sealed-read grant serves nothing else.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/byte_io.h"
#include "common/capability.h"
#include "common/test_count.h"
#include "common/test_seed.h"
#include "dataserver/store_fixture.h"
#include "transfer/retire_sender.h"
#include "transfer/shm_transport.h"
#include "transfer/tcp_transport.h"

using namespace mc::transfer;
using mc::CapabilityGrant;
using mc::CapabilityOp;
using mc::ErrorCode;
using mc::transfer::testing::Store;

namespace {

constexpr uint64_t kIncarnation = 7;
const std::string kKey(32, 's');
constexpr uint64_t kSegmentBytes = 4 << 20;
constexpr uint64_t kNowMs = 1000000;

Grant Sign(CapabilityOp op, uint64_t offset, uint64_t size) {
  CapabilityGrant g{op, kIncarnation, offset, size, kNowMs + 60000};
  Grant out{offset, size, g.expiry_unix_ms, mc::SignCapability(kKey, g)};
  out.sealed_only = op == CapabilityOp::kReadSealed;
  return out;
}

Store GrantedStore() {
  return Store::Make(kSegmentBytes, CapabilityCheck(kKey, kIncarnation, [] { return kNowMs; }));
}

TransferOp SealedRead(const Endpoint& ep, uint64_t offset, std::string& into, uint64_t seal,
                      const Grant& grant) {
  TransferOp op;
  op.kind = OpKind::kRead;
  op.endpoint = &ep;
  op.remote_offset = offset;
  op.buffer = into.data();
  op.len = into.size();
  op.sealed = true;
  op.seal = seal;
  op.grant = grant;
  return op;
}


}  // namespace

TEST_CASE("a TCP sealed read keeps its seal until a TCP or shm write touches the range") {
  Store st = GrantedStore();
  TcpTransport tcp;
  ShmTransport shm;
  const std::string v1(4096, 'a');
  REQUIRE(tcp.Write(st.endpoint, 65536, v1.data(), v1.size(),
                    Sign(CapabilityOp::kWrite, 65536, 4096)).ok());
  std::string got(4096, '\0');
  TransferOp op = SealedRead(st.endpoint, 65536, got, 0, Sign(CapabilityOp::kRead, 65536, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  const uint64_t seal = op.seal;
  CHECK(seal != 0);
  CHECK(got == v1);
  // A direct read names the seal under a sealed-read grant.
  op = SealedRead(st.endpoint, 65536, got, seal, Sign(CapabilityOp::kReadSealed, 65536, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  CHECK(op.seal == seal);
  // The space is written anew by a same-host client: stale.
  REQUIRE(shm.Write(st.endpoint, 65536 + 4000, "zz", 2).ok());
  op = SealedRead(st.endpoint, 65536, got, seal, Sign(CapabilityOp::kReadSealed, 65536, 4096));
  CHECK(tcp.Batch({&op, 1}).code() == ErrorCode::REPLICA_IS_GONE);
  // Learnt again under a lease grant, then written over TCP: stale again.
  op = SealedRead(st.endpoint, 65536, got, 0, Sign(CapabilityOp::kRead, 65536, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  const uint64_t seal2 = op.seal;
  REQUIRE(tcp.Write(st.endpoint, 61440, v1.data(), v1.size(),
                    Sign(CapabilityOp::kWrite, 61440, 4096)).ok());  // the region before only
  op = SealedRead(st.endpoint, 65536, got, seal2, Sign(CapabilityOp::kReadSealed, 65536, 4096));
  CHECK(tcp.Batch({&op, 1}).ok());
  REQUIRE(tcp.Write(st.endpoint, 65536 + 8, v1.data(), 8,
                    Sign(CapabilityOp::kWrite, 65536, 4096)).ok());
  op = SealedRead(st.endpoint, 65536, got, seal2, Sign(CapabilityOp::kReadSealed, 65536, 4096));
  CHECK(tcp.Batch({&op, 1}).code() == ErrorCode::REPLICA_IS_GONE);
  CHECK(st.server->stats().stale_reads == 2);
}

TEST_CASE("a RETIRE from the master makes a cached seal stale and no new one learnable") {
  Store st = GrantedStore();
  TcpTransport tcp;
  const std::string v1(4096, 'a');
  REQUIRE(tcp.Write(st.endpoint, 8192, v1.data(), v1.size(),
                    Sign(CapabilityOp::kWrite, 8192, 4096)).ok());
  std::string got(4096, '\0');
  TransferOp op = SealedRead(st.endpoint, 8192, got, 0, Sign(CapabilityOp::kRead, 8192, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  const uint64_t seal = op.seal;
  REQUIRE(seal != 0);
  RetireSender sender({});
  // A grant for another op does not retire: the store refuses it.
  RetireRange wrong{8192, 4096, Sign(CapabilityOp::kWrite, 8192, 4096)};
  CHECK(sender.Retire(st.endpoint, {&wrong, 1}).code() == ErrorCode::INVALID_WRITE);
  op = SealedRead(st.endpoint, 8192, got, seal, Sign(CapabilityOp::kReadSealed, 8192, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  // The master's retire grant does, on the same connection.
  RetireRange retire{8192, 4096, Sign(CapabilityOp::kRetire, 8192, 4096)};
  REQUIRE(sender.Retire(st.endpoint, {&retire, 1}).ok());
  CHECK(st.server->stats().retires == 1);
  op = SealedRead(st.endpoint, 8192, got, seal, Sign(CapabilityOp::kReadSealed, 8192, 4096));
  CHECK(tcp.Batch({&op, 1}).code() == ErrorCode::REPLICA_IS_GONE);
  // A reader that got the location before the removal learns nothing now.
  op = SealedRead(st.endpoint, 8192, got, 0, Sign(CapabilityOp::kRead, 8192, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  CHECK(op.seal == 0);
  // The next object written there is learnable again.
  REQUIRE(tcp.Write(st.endpoint, 8192, v1.data(), v1.size(),
                    Sign(CapabilityOp::kWrite, 8192, 4096)).ok());
  op = SealedRead(st.endpoint, 8192, got, 0, Sign(CapabilityOp::kRead, 8192, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  CHECK(op.seal != 0);
}

TEST_CASE("a sealed-read grant serves only sealed reads that name a seal") {
  Store st = GrantedStore();
  TcpTransport tcp;
  const Grant sealed = Sign(CapabilityOp::kReadSealed, 0, 4096);
  std::string got(4096, '\0');
  // A plain READ under it: refused (it would read reused space unchecked).
  CHECK(tcp.Read(st.endpoint, 0, got.data(), got.size(), sealed).code() ==
        ErrorCode::INVALID_READ);
  // A sealed read naming no seal: refused too.
  TransferOp op = SealedRead(st.endpoint, 0, got, 0, sealed);
  CHECK(tcp.Batch({&op, 1}).code() == ErrorCode::INVALID_READ);
  // A lease grant learns the seal; the sealed-read grant then serves.
  op = SealedRead(st.endpoint, 0, got, 0, Sign(CapabilityOp::kRead, 0, 4096));
  REQUIRE(tcp.Batch({&op, 1}).ok());
  op = SealedRead(st.endpoint, 0, got, op.seal, sealed);
  CHECK(tcp.Batch({&op, 1}).ok());
}

TEST_CASE("a store whose epochs are bypassed answers seal 0, and NOT_SUPPORTED to a named seal") {
  // As a store serving RDMA does: mark the segment, give its server no epochs.
  Store bypassed = Store::Make(kSegmentBytes);
  bypassed.segment->MarkEpochsBypassed();
  TcpDataServerOptions none;
  none.listen_host = "127.0.0.1";
  auto srv = TcpDataServer::Start(bypassed.segment->base(), bypassed.segment->size_bytes(),
                                  AllowAll(), none);
  REQUIRE(srv.ok());
  Endpoint ep{"127.0.0.1", (*srv)->port(), ""};
  TcpTransport tcp;
  std::string got(100, '\0');
  TransferOp op = SealedRead(ep, 0, got, 0, {});
  REQUIRE(tcp.Batch({&op, 1}).ok());
  CHECK(op.seal == 0);
  op = SealedRead(ep, 0, got, 5, {});
  CHECK(tcp.Batch({&op, 1}).code() == ErrorCode::NOT_SUPPORTED);
  // Same-host readers see the mark in the file's trailer.
  ShmTransport shm;
  Endpoint local{"", 0, bypassed.segment->shm_path()};
  op = SealedRead(local, 0, got, 5, {});
  CHECK(shm.Batch({&op, 1}).code() == ErrorCode::NOT_SUPPORTED);
}

// Objects come and go in a small segment (writers re-put keys at random
// places over TCP and shm, overlapping whatever was there); readers remember
// where a key's version lives and its seal and read straight from the store
// on both paths. Each object's bytes are stamped with its key and version:
// an accepted read must carry exactly the version it named.
TEST_CASE("racing re-puts over TCP and shm never let a direct read return another version") {
  const uint64_t seed = mc::TestSeed("sealed reads race");
  const uint64_t reads = mc::TestCount("MC_SEALED_READS", 3000);
  Store st = Store::Make(256 << 10);
  constexpr uint64_t kKeys = 16, kObjectBytes = 8192, kSlots = (256 << 10) / 64;
  std::mutex mu;  // the "master": where each key's latest version lives
  struct Where {
    uint64_t offset = 0, version = 0;
  };
  std::vector<Where> latest(kKeys);
  std::atomic<uint64_t> next_version{1};
  std::atomic<bool> stop{false};
  auto stamp = [](uint64_t key, uint64_t version) {
    std::string b(kObjectBytes, '\0');
    for (uint64_t i = 0; i < kObjectBytes; i += 16) {
      mc::StoreLe64(&b[i], key);
      mc::StoreLe64(&b[i + 8], version);
    }
    return b;
  };
  auto writer = [&](uint64_t s, bool use_shm) {
    std::mt19937_64 rng(s);
    TcpTransport tcp;
    ShmTransport shm;
    Transport& t = use_shm ? static_cast<Transport&>(shm) : tcp;
    while (!stop.load()) {
      const uint64_t key = rng() % kKeys;
      const uint64_t offset = 64 * (rng() % (kSlots - kObjectBytes / 64));
      const uint64_t version = next_version.fetch_add(1);
      const std::string b = stamp(key, version);
      if (!t.Write(st.endpoint, offset, b.data(), b.size()).ok()) continue;
      std::lock_guard<std::mutex> lock(mu);
      latest[key] = {offset, version};
    }
  };
  {
    // Every key exists before the race starts.
    TcpTransport tcp;
    for (uint64_t key = 0; key < kKeys; ++key) {
      const uint64_t version = next_version.fetch_add(1);
      REQUIRE(tcp.Write(st.endpoint, key * kObjectBytes, stamp(key, version).data(),
                        kObjectBytes).ok());
      latest[key] = {key * kObjectBytes, version};
    }
  }
  const uint64_t first_racing = next_version.load();
  std::thread w1(writer, seed, false), w2(writer, seed + 1, true);
  std::mt19937_64 rng(seed + 2);
  TcpTransport tcp;
  ShmTransport shm;
  struct Cached {
    uint64_t offset = 0, version = 0, seal = 0;
  };
  std::map<uint64_t, Cached> cache;
  uint64_t direct = 0, stale = 0, wrong = 0;
  std::string got(kObjectBytes, '\0');
  // At least `reads` reads, and on until the writers raced a while (bounded).
  for (uint64_t r = 0; r < reads || (next_version.load() - first_racing < 500 && r < 100 * reads);
       ++r) {
    const uint64_t key = rng() % kKeys;
    Transport& t = rng() % 2 ? static_cast<Transport&>(shm) : tcp;
    auto it = cache.find(key);
    if (it == cache.end()) {
      Where w;
      {
        std::lock_guard<std::mutex> lock(mu);
        w = latest[key];
      }
      if (w.version == 0) continue;
      TransferOp op = SealedRead(st.endpoint, w.offset, got, 0, {});
      if (!t.Batch({&op, 1}).ok()) continue;
      // Learnt without a lease, so the bytes may already be another
      // object's: cache only what holds this version (the master's lease
      // guarantees that in the real flow).
      if (op.seal != 0 && got == stamp(key, w.version)) cache[key] = {w.offset, w.version, op.seal};
      continue;
    }
    TransferOp op = SealedRead(st.endpoint, it->second.offset, got, it->second.seal, {});
    if (!t.Batch({&op, 1}).ok()) {
      ++stale;
      cache.erase(it);
      continue;
    }
    ++direct;
    if (got != stamp(key, it->second.version)) ++wrong;
  }
  stop.store(true);
  w1.join();
  w2.join();
  MESSAGE("direct reads: " << direct << " served, " << stale << " stale, "
                           << next_version.load() - 1 << " racing re-puts");
  CHECK(wrong == 0);
  CHECK(direct > 0);
  CHECK(stale > 0);
}
