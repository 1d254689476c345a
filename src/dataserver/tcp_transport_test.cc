#include "transfer/tcp_transport.h"

#include <doctest/doctest.h>

#include <cstring>
#include <thread>

#include "dataserver/store_fixture.h"

using namespace mc::transfer;
using mc::ErrorCode;
using mc::transfer::testing::RandomBytes;
using mc::transfer::testing::Store;
using mc::transfer::testing::TestSeed;

namespace {

constexpr uint64_t kSegmentBytes = 160ull << 20;

const size_t kSizes[] = {1, 7, 4096, 65537, (1 << 20) + 3, 4 << 20, (9 << 20) + 11, 64 << 20};

TcpTransportOptions Striping(int streams, uint64_t min_chunk, uint64_t max_chunk) {
  TcpTransportOptions opts;
  opts.streams = streams;
  opts.min_chunk_bytes = min_chunk;
  opts.max_chunk_bytes = max_chunk;
  return opts;
}

}  // namespace

TEST_CASE("tcp writes and reads are byte-identical from 1 byte to 64 MiB") {
  std::mt19937_64 rng(TestSeed());
  Store store = Store::Make(kSegmentBytes);
  TcpTransport tcp;
  for (size_t len : kSizes) {
    CAPTURE(len);
    auto data = RandomBytes(rng, len);
    uint64_t offset = rng() % (kSegmentBytes - len + 1);
    REQUIRE(tcp.Write(store.endpoint, offset, data.data(), len).ok());
    CHECK(std::memcmp(store.segment->base() + offset, data.data(), len) == 0);
    std::vector<uint8_t> back(len);
    REQUIRE(tcp.Read(store.endpoint, offset, back.data(), len).ok());
    CHECK(back == data);
  }
}

TEST_CASE("a large transfer is striped over several connections") {
  std::mt19937_64 rng(TestSeed() + 1);
  Store store = Store::Make(kSegmentBytes);
  TcpTransport tcp(Striping(3, 1 << 20, 1 << 20));
  auto data = RandomBytes(rng, 24 << 20);
  REQUIRE(tcp.Write(store.endpoint, 0, data.data(), data.size()).ok());
  auto stats = store.server->stats();
  CHECK(stats.connections_accepted >= 2);
  CHECK(stats.connections_accepted <= 3);
  CHECK(stats.requests_served == 24);
  std::vector<uint8_t> back(data.size());
  REQUIRE(tcp.Read(store.endpoint, 0, back.data(), back.size()).ok());
  CHECK(back == data);
  CHECK(store.server->stats().connections_accepted <= 3);  // pooled, not reconnected
}

TEST_CASE("reads stripe from min_read_chunk_bytes up, writes from min_chunk_bytes") {
  std::mt19937_64 rng(TestSeed() + 9);
  Store store = Store::Make(kSegmentBytes);
  TcpTransportOptions opts = Striping(4, 1 << 20, 4 << 20);
  opts.min_read_chunk_bytes = 4 << 20;
  TcpTransport tcp(opts);
  auto data = RandomBytes(rng, 4 << 20);
  REQUIRE(tcp.Write(store.endpoint, 0, data.data(), data.size()).ok());
  CHECK(store.server->stats().requests_served == 4);  // 4 pieces of 1 MiB
  std::vector<uint8_t> back(data.size());
  REQUIRE(tcp.Read(store.endpoint, 0, back.data(), back.size()).ok());
  CHECK(back == data);
  CHECK(store.server->stats().requests_served == 5);  // one piece of 4 MiB
  // Twice the read threshold: striped again, into pieces no smaller than it.
  auto big = RandomBytes(rng, 8 << 20);
  REQUIRE(tcp.Write(store.endpoint, 0, big.data(), big.size()).ok());
  const uint64_t before = store.server->stats().requests_served;
  std::vector<uint8_t> big_back(big.size());
  REQUIRE(tcp.Read(store.endpoint, 0, big_back.data(), big_back.size()).ok());
  CHECK(big_back == big);
  CHECK(store.server->stats().requests_served - before == 2);
}

TEST_CASE("by default a 4 MiB object moves as 8 pieces of 512 KiB, a 64 MiB one in 1 MiB pieces") {
  std::mt19937_64 rng(TestSeed() + 10);
  Store store = Store::Make(kSegmentBytes);
  TcpTransport tcp;
  auto data = RandomBytes(rng, 4 << 20);
  REQUIRE(tcp.Write(store.endpoint, 0, data.data(), data.size()).ok());
  CHECK(store.server->stats().requests_served == 8);
  std::vector<uint8_t> back(data.size());
  REQUIRE(tcp.Read(store.endpoint, 0, back.data(), back.size()).ok());
  CHECK(back == data);
  CHECK(store.server->stats().requests_served == 16);
  auto big = RandomBytes(rng, 64 << 20);
  REQUIRE(tcp.Write(store.endpoint, 0, big.data(), big.size()).ok());
  CHECK(store.server->stats().requests_served == 16 + 64);
  // Below 512 KiB: one piece.
  REQUIRE(tcp.Read(store.endpoint, 0, back.data(), 300 << 10).ok());
  CHECK(store.server->stats().requests_served == 16 + 64 + 1);
}

TEST_CASE("a batch moves several ops to several stores in parallel") {
  std::mt19937_64 rng(TestSeed() + 2);
  Store a = Store::Make(16 << 20);
  Store b = Store::Make(16 << 20);
  TcpTransport tcp;
  auto x = RandomBytes(rng, 5 << 20);
  auto y = RandomBytes(rng, 3000);
  std::vector<TransferOp> ops = {{OpKind::kWrite, &a.endpoint, 100, x.data(), x.size(), {}},
                                 {OpKind::kWrite, &b.endpoint, 7, y.data(), y.size(), {}}};
  REQUIRE(tcp.Batch(ops).ok());
  std::vector<uint8_t> x2(x.size()), y2(y.size());
  std::vector<TransferOp> reads = {{OpKind::kRead, &a.endpoint, 100, x2.data(), x2.size(), {}},
                                   {OpKind::kRead, &b.endpoint, 7, y2.data(), y2.size(), {}}};
  REQUIRE(tcp.Batch(reads).ok());
  CHECK(x2 == x);
  CHECK(y2 == y);
}

TEST_CASE("concurrent clients and callers each get their own bytes back") {
  Store store = Store::Make(kSegmentBytes);
  TcpTransport shared;
  constexpr int kThreads = 6;
  constexpr size_t kRegion = 8 << 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(TestSeed() + 100 + t);
      TcpTransport own;
      TcpTransport& tcp = (t % 2 == 0) ? shared : own;
      for (int round = 0; round < 4; ++round) {
        size_t len = 1 + rng() % kRegion;
        auto data = RandomBytes(rng, len);
        uint64_t off = t * kRegion;
        std::vector<uint8_t> back(len);
        if (!tcp.Write(store.endpoint, off, data.data(), len).ok() ||
            !tcp.Read(store.endpoint, off, back.data(), len).ok() || back != data) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("a deny callback refuses the range and the server keeps serving") {
  std::mt19937_64 rng(TestSeed() + 3);
  // Writes only in [0, 1 MiB), reads only in [1 MiB, 2 MiB).
  AccessCheck check = [](OpKind op, uint64_t off, uint64_t len, const Grant&) -> mc::Status {
    uint64_t lo = op == OpKind::kWrite ? 0 : (1 << 20);
    if (off >= lo && off + len <= lo + (1 << 20)) return mc::Status::Ok();
    return mc::Error(op == OpKind::kWrite ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                     "not a buffer you may touch");
  };
  Store store = Store::Make(4 << 20, check);
  TcpTransport tcp;
  auto data = RandomBytes(rng, 300000);
  std::memset(store.segment->base(), 0, 4 << 20);

  auto st = tcp.Write(store.endpoint, 2 << 20, data.data(), data.size());
  CHECK(st.code() == ErrorCode::INVALID_WRITE);
  CHECK(st.message().find("not a buffer you may touch") != std::string::npos);
  CHECK(store.segment->base()[2 << 20] == 0);  // nothing landed
  std::vector<uint8_t> back(data.size());
  CHECK(tcp.Read(store.endpoint, 0, back.data(), back.size()).code() == ErrorCode::INVALID_READ);

  REQUIRE(tcp.Write(store.endpoint, 0, data.data(), data.size()).ok());
  std::memcpy(store.segment->base() + (1 << 20), data.data(), data.size());
  REQUIRE(tcp.Read(store.endpoint, 1 << 20, back.data(), back.size()).ok());
  CHECK(back == data);
  auto stats = store.server->stats();
  CHECK(stats.requests_refused == 2);
  CHECK(stats.connections_accepted == 1);  // refusals did not cost the connection
}

TEST_CASE("out-of-bounds ranges are refused by the server, not just the client") {
  Store store = Store::Make(1 << 20);
  TcpTransport tcp;
  std::vector<uint8_t> buf(4096, 7);
  CHECK(tcp.Write(store.endpoint, (1 << 20) - 100, buf.data(), buf.size()).code() ==
        ErrorCode::INVALID_WRITE);
  CHECK(tcp.Read(store.endpoint, 1ull << 40, buf.data(), buf.size()).code() ==
        ErrorCode::INVALID_READ);
  CHECK(tcp.Write(store.endpoint, 0, buf.data(), buf.size()).ok());
}

TEST_CASE("tcp authentication accepts the right token and refuses a wrong or missing one") {
  TcpDataServerOptions sopts;
  sopts.auth_token = "s3cret-token";
  Store store = Store::Make(1 << 20, AllowAll(), sopts);
  std::vector<uint8_t> buf(1000, 42);

  TcpTransportOptions right;
  right.auth_token = "s3cret-token";
  TcpTransport good(right);
  CHECK(good.Write(store.endpoint, 0, buf.data(), buf.size()).ok());

  TcpTransportOptions wrong;
  wrong.auth_token = "guess";
  TcpTransport bad(wrong);
  CHECK(bad.Write(store.endpoint, 0, buf.data(), buf.size()).code() == ErrorCode::AUTH_FAILED);

  TcpTransport none;
  CHECK(none.Read(store.endpoint, 0, buf.data(), buf.size()).code() == ErrorCode::AUTH_FAILED);
  CHECK(store.server->stats().auth_failures == 1);  // `none` never tried
  CHECK(good.Read(store.endpoint, 0, buf.data(), buf.size()).ok());
}

TEST_CASE("connections above the server limit are refused with a clear error") {
  TcpDataServerOptions sopts;
  sopts.max_connections = 1;
  Store store = Store::Make(1 << 20, AllowAll(), sopts);
  TcpTransport first, second;
  std::vector<uint8_t> buf(100, 1);
  REQUIRE(first.Write(store.endpoint, 0, buf.data(), buf.size()).ok());  // holds the one slot
  CHECK(second.Write(store.endpoint, 0, buf.data(), buf.size()).code() ==
        ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  CHECK(store.server->stats().connections_refused == 1);
}

TEST_CASE("pooled connections closed by a restarted server are replaced transparently") {
  std::mt19937_64 rng(TestSeed() + 4);
  Store store = Store::Make(8 << 20);
  TcpTransport tcp;
  auto data = RandomBytes(rng, 6 << 20);
  REQUIRE(tcp.Write(store.endpoint, 0, data.data(), data.size()).ok());  // fills the pool
  const uint16_t port = store.server->port();
  store.server.reset();  // every pooled connection is now dead
  TcpDataServerOptions opts;
  opts.listen_host = "127.0.0.1";
  opts.port = port;
  auto restarted =
      TcpDataServer::Start(store.segment->base(), store.segment->size_bytes(), AllowAll(), opts);
  REQUIRE(restarted.ok());
  std::vector<uint8_t> back(data.size());
  mc::Status st = tcp.Read(store.endpoint, 0, back.data(), back.size());
  INFO(st.ToString());
  REQUIRE(st.ok());
  CHECK(back == data);
}

TEST_CASE("a dead peer fails the transfer with TRANSFER_FAIL instead of hanging") {
  Store store = Store::Make(1 << 20);
  Endpoint ep = store.endpoint;
  store.server.reset();
  TcpTransport tcp;
  uint8_t b = 0;
  CHECK(tcp.Write(ep, 0, &b, 1).code() == ErrorCode::TRANSFER_FAIL);
}

TEST_CASE("a batch marks the ops of a peer it cannot reach, not those a live peer refused") {
  std::mt19937_64 rng(TestSeed() + 9);
  // Writes only in [0, 1 MiB): a live store that says no to the rest.
  AccessCheck check = [](OpKind, uint64_t off, uint64_t len, const Grant&) -> mc::Status {
    if (off + len <= (1 << 20)) return mc::Status::Ok();
    return mc::Error(ErrorCode::INVALID_WRITE, "not a buffer you may touch");
  };
  Store live = Store::Make(4 << 20, check);
  Store dead = Store::Make(4 << 20);
  Endpoint gone = dead.endpoint;
  dead.server.reset();
  TcpTransportOptions o;
  o.streams = 4;
  o.min_chunk_bytes = 64 << 10;  // several chunks per op, on several streams
  TcpTransport tcp(o);
  auto data = RandomBytes(rng, 1 << 20);
  std::vector<TransferOp> ops = {
      {OpKind::kWrite, &gone, 0, data.data(), data.size(), {}},
      {OpKind::kWrite, &live.endpoint, 0, data.data(), data.size(), {}},
      {OpKind::kWrite, &gone, 2 << 20, data.data(), 1000, {}},
      {OpKind::kWrite, &live.endpoint, 2 << 20, data.data(), 1000, {}}};
  CHECK(tcp.Batch(ops).code() == ErrorCode::TRANSFER_FAIL);  // the first failure, op 0's
  CHECK(ops[0].status.code() == ErrorCode::TRANSFER_FAIL);
  CHECK(ops[0].peer_unreachable);
  CHECK(ops[2].status.code() == ErrorCode::TRANSFER_FAIL);
  CHECK(ops[2].peer_unreachable);
  CHECK(ops[1].status.ok());
  CHECK_FALSE(ops[1].peer_unreachable);
  CHECK(std::memcmp(live.segment->base(), data.data(), data.size()) == 0);
  CHECK(ops[3].status.code() == ErrorCode::INVALID_WRITE);
  CHECK_FALSE(ops[3].peer_unreachable);  // it answered: a refusal, not a partition
}

TEST_CASE("a batch of small ops goes pipelined, and a refused op in it fails alone") {
  std::mt19937_64 rng(TestSeed() + 40);
  // Every 7th 4 KiB slot is off limits to both writes and reads.
  AccessCheck check = [](OpKind op, uint64_t off, uint64_t, const Grant&) -> mc::Status {
    if ((off / 4096) % 7 == 3) {
      return mc::Error(op == OpKind::kWrite ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                       "slot off limits");
    }
    return mc::Status::Ok();
  };
  Store a = Store::Make(4 << 20, check);
  Store b = Store::Make(4 << 20, check);
  TcpTransport tcp;
  // More ops than one window, sizes from 0 to 4 KiB, alternating stores.
  const size_t n = 2 * kPipelineWindowOps + 5;
  std::vector<std::vector<uint8_t>> data(n), back(n);
  std::vector<TransferOp> writes, reads;
  for (size_t i = 0; i < n; ++i) {
    data[i] = RandomBytes(rng, rng() % 4097);
    back[i].assign(data[i].size(), 0);
    const Endpoint* ep = i % 3 == 0 ? &b.endpoint : &a.endpoint;
    writes.push_back({OpKind::kWrite, ep, i * 4096, data[i].data(), data[i].size(), {}});
    reads.push_back({OpKind::kRead, ep, i * 4096, back[i].data(), back[i].size(), {}});
  }
  CHECK(tcp.Batch(writes).code() == ErrorCode::INVALID_WRITE);
  CHECK(tcp.Batch(reads).code() == ErrorCode::INVALID_READ);
  for (size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    if (i % 7 == 3) {
      CHECK(writes[i].status.code() == ErrorCode::INVALID_WRITE);
      CHECK(reads[i].status.code() == ErrorCode::INVALID_READ);
      CHECK(!reads[i].peer_unreachable);
    } else {
      REQUIRE(writes[i].status.ok());
      REQUIRE(reads[i].status.ok());
      CHECK(back[i] == data[i]);
    }
  }
  // One connection per store carried it all: refusals keep the connection.
  CHECK(a.server->stats().connections_accepted == 1);
  CHECK(b.server->stats().connections_accepted == 1);
}
