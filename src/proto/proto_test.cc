#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "proto/auth.h"
#include "proto/codec.h"
#include "proto/frame.h"
#include "proto/handshake.h"
#include "proto/ops.h"
#include "proto/testing.h"

using namespace mc;
using namespace mc::proto;

namespace {

template <typename T>
std::string Enc(const T& v) {
  std::string out;
  EncodePayload(v, &out);
  return out;
}

// Encodes, decodes, checks equality; then checks that every strict prefix
// and the encoding plus one byte are refused as PROTOCOL_ERROR.
template <typename T, typename Eq>
void CheckRoundTrip(const T& v, Eq eq) {
  std::string bytes = Enc(v);
  T back{};
  Status st = DecodePayload(bytes, &back, "test");
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  CHECK(eq(v, back));
  for (size_t n = 0; n < bytes.size(); ++n) {
    T cut{};
    Status bad = DecodePayload(std::string_view(bytes.data(), n), &cut, "test");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.code() == ErrorCode::PROTOCOL_ERROR);
  }
  T longer{};
  CHECK(DecodePayload(bytes + "x", &longer, "test").code() == ErrorCode::PROTOCOL_ERROR);
}
template <typename T>
void CheckRoundTrip(const T& v) {
  CheckRoundTrip(v, [](const T& a, const T& b) { return a == b; });
}

// Feeds `bytes` to the decoder of every payload type: each must either
// succeed or fail with PROTOCOL_ERROR.
void DecodeAsEverything(std::string_view bytes) {
  auto one = [&](auto* v) {
    Status st = DecodePayload(bytes, v, "fuzz");
    CHECK((st.ok() || st.code() == ErrorCode::PROTOCOL_ERROR));
  };
  msg::MountSegmentRequest a; one(&a);
  msg::UnmountSegmentRequest b; one(&b);
  msg::PingRequest c; one(&c);
  msg::PingReply d; one(&d);
  msg::TransferReport d2; one(&d2);
  msg::PutStartRequest e; one(&e);
  msg::PutStartReply f; one(&f);
  msg::KeyRequest g; one(&g);
  msg::GetReplicaListReply h; one(&h);
  msg::RemoveRequest i; one(&i);
  msg::RemoveAllReply j; one(&j);
  msg::ListKeysRequest k; one(&k);
  msg::ListKeysReply l; one(&l);
  msg::ClusterStatusReply m; one(&m);
  msg::Batch<msg::PutStartRequest> n; one(&n);
  msg::Batch<msg::KeyRequest> o; one(&o);
  msg::Batch<msg::RemoveRequest> p; one(&p);
  msg::Batch<msg::BatchItem<msg::PutStartReply>> q; one(&q);
  msg::Batch<msg::BatchItem<msg::GetReplicaListReply>> r; one(&r);
  msg::Batch<msg::BatchItem<bool>> s; one(&s);
  msg::Batch<Status> t; one(&t);
  HelloRequest u; one(&u);
  HelloReply w; one(&w);
  AuthRequest x; one(&x);
  AuthReply y; one(&y);
  (void)DecodeReply<msg::GetReplicaListReply>(bytes, "fuzz");
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}

}  // namespace

TEST_CASE("a frame header round-trips and is 20 little-endian bytes") {
  FrameHeader h{kProtocolVersion, kFlagReply, Opcode::kBatchPutStart, 1234, 0x0102030405060708};
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  CHECK(std::memcmp(buf, "MCRP", 4) == 0);
  CHECK(buf[4] == 1);
  CHECK(buf[5] == 1);
  CHECK(buf[6] == 0x40);
  CHECK(buf[7] == 0x00);
  CHECK(buf[8] == (1234 & 0xff));
  CHECK(buf[12] == 0x08);
  CHECK(buf[19] == 0x01);
  auto back = DecodeFrameHeader(buf, sizeof buf, kMaxPayloadBytes);
  REQUIRE(back.ok());
  CHECK(*back == h);
  CHECK(OpcodeName(Opcode::kBatchPutStart) == "BatchPutStart");
  CHECK(IsKnownOpcode(0x0045));
  CHECK(IsKnownOpcode(0x0046));
  CHECK(OpcodeName(Opcode::kReleaseLeases) == "ReleaseLeases");
  CHECK(IsKnownOpcode(0x0047));
  CHECK(IsKnownOpcode(0x0048));
  CHECK(OpcodeName(Opcode::kRemoveAllEx) == "RemoveAllEx");
  CHECK(OpcodeName(Opcode::kBatchPutStartEx) == "BatchPutStartEx");
  CHECK(IsKnownOpcode(0x0049));
  CHECK(OpcodeName(Opcode::kReportTransfers) == "ReportTransfers");
  CHECK_FALSE(IsKnownOpcode(0x004a));
  CHECK(IsNotification(Opcode::kReleaseLeases));
  CHECK(IsNotification(Opcode::kReportTransfers));
  CHECK_FALSE(IsNotification(Opcode::kBatchGetReplicaList));
}

TEST_CASE("bad frame headers are refused with the reason") {
  FrameHeader h{kProtocolVersion, 0, Opcode::kPing, 100, 1};
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  auto truncated = DecodeFrameHeader(buf, 19, kMaxPayloadBytes);
  CHECK(truncated.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK(DecodeFrameHeader(buf, sizeof buf, 99).status().message().find("exceeds the limit of 99") !=
        std::string::npos);
  buf[5] = 0x80;
  CHECK(DecodeFrameHeader(buf, sizeof buf, kMaxPayloadBytes).status().message().find("flags") !=
        std::string::npos);
  buf[5] = 0;
  buf[0] = 'G';  // an HTTP client: "GET /"
  auto http = DecodeFrameHeader(buf, sizeof buf, kMaxPayloadBytes);
  CHECK(http.status().message().find("bad frame magic") != std::string::npos);
}

TEST_CASE("every message type round-trips, and its truncations are refused") {
  msg::ClientId client{0x1122334455667788, 0x99aabbccddeeff00};
  CHECK(client.ToString() == "112233445566778899aabbccddeeff00");
  msg::SegmentDesc seg{"host:1", "host", "10.0.0.1:7000", "/dev/shm/x", 1 << 30, 42, "key"};
  msg::BufferDesc buf{"host:1", "10.0.0.1:7000", "/dev/shm/x", "host", 4096, 1 << 20, "mac", 99};
  msg::ReplicaDesc rep{msg::ReplicaStatus::kComplete, {buf, buf}};
  CheckRoundTrip(msg::MountSegmentRequest{client, seg});
  CheckRoundTrip(msg::UnmountSegmentRequest{client, "host:1"});
  CheckRoundTrip(msg::PingRequest{client});
  CheckRoundTrip(msg::PingReply{true, 7, 9});
  CheckRoundTrip(msg::TransferReport{client, {{1, 0, 3, 3 << 20}, {0, 1, 1, 4096}}});
  CheckRoundTrip(msg::PutStartRequest{client, "key", 4096, {3, true}});
  CheckRoundTrip(msg::PutStartReply{{rep, rep}});
  {
    // BatchPutStartEx carries the placement that PutStart's payload leaves out.
    msg::PutStartExRequest ex{{client, "key", 4096, {2, true, {{"s1", "s2"}, "host", 60000, true}}}};
    CheckRoundTrip(ex, [](const msg::PutStartExRequest& a, const msg::PutStartExRequest& b) {
      const msg::PutPlacement& x = a.start.options.placement;
      const msg::PutPlacement& y = b.start.options.placement;
      return a.start == b.start && x.preferred_segments == y.preferred_segments &&
             x.preferred_host == y.preferred_host && x.soft_pin_ttl_ms == y.soft_pin_ttl_ms &&
             x.hard_pin == y.hard_pin;
    });
  }
  CheckRoundTrip(msg::KeyRequest{client, "k"});
  CheckRoundTrip(msg::GetReplicaListReply{{rep}, 2 << 20, 10000000});
  CheckRoundTrip(msg::RemoveRequest{"k", true});
  CheckRoundTrip(msg::RemoveAllRequest{true});
  CheckRoundTrip(msg::RemoveAllReply{12});
  CheckRoundTrip(msg::ListKeysRequest{"pre", 100, "cur"});
  CheckRoundTrip(msg::ListKeysReply{{{"a", 1, 2, true}, {"b", 3, 1, false}}, "b"});
  CheckRoundTrip(msg::ClusterStatusReply{10, 5, 3, 1, 2, {{"s", "e", 10, 5}}});
  CheckRoundTrip(msg::Batch<msg::KeyRequest>{{client, "a"}, {client, "b"}});
  CheckRoundTrip(msg::TierPollRequest{
      {client, "host:1", 10, 20, {{7, Status::Ok()}, {8, Error(ErrorCode::FILE_WRITE_FAIL, "x")}}},
      2500});
  CheckRoundTrip(msg::TieredListKeysReply{{{{"a", 1, 2, true}, {"b", 3, 0, false}}, "b"}, {2, 1}});
  CheckRoundTrip(msg::Batch<msg::BatchItem<bool>>{{Status::Ok(), true},
                                        {Error(ErrorCode::OBJECT_NOT_FOUND, "no 'b'"), false}});
  CheckRoundTrip(msg::Batch<Status>{Status::Ok(), Error(ErrorCode::OBJECT_HAS_LEASE, "leased")},
                 SameStatuses);
  CheckRoundTrip(HelloRequest{RandomNonce()});
  CheckRoundTrip(HelloReply{1, true, RandomNonce()});
  CheckRoundTrip(AuthRequest{true, Proof{1, 2, 3}});
  CheckRoundTrip(AuthRequest{false, Proof{}});
  CheckRoundTrip(AuthReply{true, Proof{9}});
}

TEST_CASE("randomized messages round-trip (MC_SEED replays)") {
  uint64_t seed = mc::TestSeed("proto round-trip");
  RandomMessages g(seed);
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    CheckRoundTrip(msg::MountSegmentRequest{g.Client(), g.Segment()});
    CheckRoundTrip(msg::UnmountSegmentRequest{g.Client(), g.Str()});
    CheckRoundTrip(msg::PingReply{g.Bool(), g.U64(), g.U64()});
    CheckRoundTrip(g.PutStart());
    CheckRoundTrip(msg::PutStartReply{g.Replicas()});
    CheckRoundTrip(g.GetReplicas());
    CheckRoundTrip(g.Remove());
    CheckRoundTrip(msg::ListKeysRequest{g.Str(), g.U32(), g.Str()});
    CheckRoundTrip(g.ListKeys());
    CheckRoundTrip(g.Cluster());
    CheckRoundTrip(g.BatchOf([&] { return g.PutStart(); }));
    CheckRoundTrip(g.BatchOf([&] { return g.Key(); }));
    CheckRoundTrip(g.BatchOf([&] { return g.Remove(); }));
    CheckRoundTrip(g.ItemsOf<msg::PutStartReply>([&] { return msg::PutStartReply{g.Replicas()}; }));
    CheckRoundTrip(g.ItemsOf<msg::GetReplicaListReply>([&] { return g.GetReplicas(); }));
    CheckRoundTrip(g.ItemsOf<bool>([&] { return g.Bool(); }));
    CheckRoundTrip(g.BatchOf([&] { return g.St(); }), SameStatuses);
  }
}

TEST_CASE("replies carry an error code and message, or the body") {
  std::string ok;
  EncodeReply(Result<msg::RemoveAllReply>(msg::RemoveAllReply{5}), &ok);
  auto back = DecodeReply<msg::RemoveAllReply>(ok, "reply");
  REQUIRE(back.ok());
  CHECK(back->removed == 5);

  std::string err;
  EncodeReply(Result<msg::RemoveAllReply>(Error(ErrorCode::OBJECT_HAS_LEASE, "key 'a' is leased")),
              &err);
  auto e = DecodeReply<msg::RemoveAllReply>(err, "reply");
  CHECK(e.code() == ErrorCode::OBJECT_HAS_LEASE);
  CHECK(e.status().message() == "key 'a' is leased");
  CHECK(err.size() == 4 + 4 + 17);  // i32 code, u32 length, message

  // A code this version does not know stays an error with its value.
  std::string future;
  EncodeErrorReply(Status(static_cast<ErrorCode>(-5555), "new"), &future);
  CHECK(static_cast<int32_t>(DecodeReply<Empty>(future, "reply").code()) == -5555);

  // Messages longer than the limit are cut by the encoder, so the peer's
  // decoder (which refuses them) always accepts what we send.
  std::string big;
  EncodeErrorReply(Error(ErrorCode::INTERNAL_ERROR, std::string(10000, 'x')), &big);
  CHECK(DecodeReply<Empty>(big, "reply").status().message().size() == kMaxMessageBytes);
}

TEST_CASE("decoders refuse values past their limits without allocating for them") {
  std::string s;
  Writer w(&s);
  Encode(w, msg::ClientId{});
  w.U32(static_cast<uint32_t>(kMaxStringBytes + 1));  // key length past the limit
  s.append(kMaxStringBytes + 1, 'k');
  msg::KeyRequest k;
  Status st = DecodePayload(s, &k, "msg::KeyRequest");
  CHECK(st.message().find("'key'") != std::string::npos);
  CHECK(st.message().find("limit") != std::string::npos);

  std::string batch;
  Writer wb(&batch);
  wb.U32(0xffffffff);  // four billion items in a 4-byte payload
  msg::Batch<msg::KeyRequest> b;
  CHECK(DecodePayload(batch, &b, "batch").message().find("more items than the limit") !=
        std::string::npos);
  std::string lying;
  Writer wl(&lying);
  wl.U32(1000);  // 1000 items, no bytes for them
  CHECK(DecodePayload(lying, &b, "batch").message().find("more items than bytes left") !=
        std::string::npos);

  std::string badbool;
  Writer wbool(&badbool);
  wbool.Str("k");
  wbool.U8(2);
  msg::RemoveRequest rr;
  CHECK(DecodePayload(badbool, &rr, "msg::RemoveRequest").code() == ErrorCode::PROTOCOL_ERROR);

  std::string badrep;
  Writer wr(&badrep);
  wr.U32(1);
  wr.U8(7);  // replica status 7 does not exist
  wr.U32(0);
  msg::PutStartReply psr;
  CHECK(DecodePayload(badrep, &psr, "msg::PutStartReply").message().find("replica status") !=
        std::string::npos);
}

TEST_CASE("random bytes decode to a value or PROTOCOL_ERROR for every type (MC_SEED replays)") {
  uint64_t seed = mc::TestSeed("proto random-bytes");
  RandomMessages g(seed);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes;
    // Half pure noise, half a valid message with a few bytes flipped.
    if (g.Bool()) {
      bytes = g.Str();
    } else {
      bytes = Enc(g.ItemsOf<msg::GetReplicaListReply>([&] { return g.GetReplicas(); }));
      for (size_t f = g.Pick(4); f > 0 && !bytes.empty(); --f)
        bytes[g.Pick(bytes.size())] = static_cast<char>(g.Pick(256));
    }
    DecodeAsEverything(bytes);
  }
}

TEST_CASE("handshake proofs match the published test vector and differ by direction") {
  Nonce server{}, client{};
  server.fill(0x01);
  client.fill(0x02);
  Proof cp = ClientProof("secret", server, client);
  Proof sp = ServerProof("secret", client, server);
  // Independently computed with Python's hmac module; printed in
  // mooncake-protocol(7) so other implementations can check themselves.
  CHECK(Hex(cp.data(), cp.size()) == "47507943c004586072c5e732f3fd1cd116803d63bedacd9cb82b381fe53be863");
  CHECK(Hex(sp.data(), sp.size()) == "d58368de96888709009b7c18693819aac4c41ea133c7a3950c1ef72e5950af0a");
  CHECK_FALSE(ProofEquals(cp, sp));
  CHECK_FALSE(ProofEquals(cp, ClientProof("Secret", server, client)));
  CHECK(ProofEquals(cp, ClientProof("secret", server, client)));
  CHECK_FALSE(RandomNonce() == RandomNonce());
  CHECK(VersionMismatchMessage(2, 1) ==
        "protocol version mismatch: client speaks version 2, server speaks version 1");
}

TEST_CASE("the EXAMPLE bytes in mooncake-protocol(7) are what we send") {
  auto frame = [](uint8_t flags, const std::string& payload) {
    std::string f(kFrameHeaderBytes, '\0');
    EncodeFrameHeader({kProtocolVersion, flags, Opcode::kExistKey,
                       static_cast<uint32_t>(payload.size()), 7},
                      reinterpret_cast<uint8_t*>(f.data()));
    return Hex(reinterpret_cast<const uint8_t*>(f.data()), f.size()) +
           Hex(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  };
  std::string req;
  EncodePayload(msg::KeyRequest{{1, 2}, "k"}, &req);
  CHECK(frame(0, req) ==
        "4d435250010024001500000007000000000000000100000000000000020000000000000001000000"
        "6b");
  std::string rep;
  EncodeReply(Result<bool>(true), &rep);
  CHECK(frame(kFlagReply, rep) == "4d43525001012400090000000700000000000000000000000000000001");
}

// ---- the operation table (proto/ops.h) ---------------------------------------

namespace {

template <Opcode op>
using OpC = std::integral_constant<Opcode, op>;
#define MC_TEST_OP_TYPE(name, value, Req, Rep, kind) std::tuple<OpC<Opcode::k##name>>{},
using AllOps = decltype(std::tuple_cat(MC_MASTER_OPS(MC_TEST_OP_TYPE) std::tuple<>{}));
#undef MC_TEST_OP_TYPE

struct TableRow {
  std::string_view name;
  uint16_t value;
  bool notify;
};
constexpr TableRow kRows[] = {
#define MC_TEST_OP_ROW(name, value, Req, Rep, kind) {#name, value, std::string_view(#kind) == "Notify"},
    MC_MASTER_OPS(MC_TEST_OP_ROW)
#undef MC_TEST_OP_ROW
};

// Statuses have no ==: a batch of them is compared by its bytes alone.
template <typename T>
constexpr bool kComparable = true;
template <>
constexpr bool kComparable<msg::Batch<Status>> = false;

// Encodes `v`, decodes it, and checks the value came back: equal where the
// type has ==, and in every case encoding to the same bytes again.
template <typename T>
void CheckIdentity(const T& v, const char* what) {
  std::string bytes = Enc(v);
  T back{};
  Status st = DecodePayload(bytes, &back, what);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  if constexpr (kComparable<T>) CHECK(v == back);
  CHECK(Enc(back) == bytes);
}

}  // namespace

TEST_CASE("every opcode of the table round-trips between its name and its value") {
  std::set<uint16_t> values;
  std::set<std::string_view> names;
  for (const TableRow& row : kRows) {
    CAPTURE(row.name);
    CHECK(values.insert(row.value).second);
    CHECK(names.insert(row.name).second);
    const auto op = static_cast<Opcode>(row.value);
    CHECK(OpcodeName(op) == row.name);
    CHECK(IsKnownOpcode(row.value));
    CHECK(IsNotification(op) == row.notify);
  }
  // Nothing outside the table and the connection's own opcodes is known.
  size_t known = 0;
  for (uint32_t v = 0; v <= 0xffff; ++v) known += IsKnownOpcode(static_cast<uint16_t>(v)) ? 1 : 0;
  CHECK(known == std::size(kRows) + 3);
  CHECK(OpcodeName(static_cast<Opcode>(0x004a)) == "Unknown");
  CHECK_FALSE(IsNotification(Opcode::kHello));
}

TEST_CASE_TEMPLATE_DEFINE("each operation's request and reply decode to what was encoded", Op,
                          op_identity) {
  constexpr Opcode op = Op::value;
  using Traits = OpTraits<op>;
  CAPTURE(OpcodeName(op));
  CHECK(Traits::kName == OpcodeName(op));
  CHECK(Traits::kNotification == IsNotification(op));
  RandomMessages g(mc::TestSeed("proto op identity") + static_cast<uint16_t>(op));
  for (int i = 0; i < 100; ++i) {
    typename Traits::Request req{};
    g.Fill(&req);
    CheckIdentity(req, "request");
    typename Traits::Reply rep{};
    g.Fill(&rep);
    CheckIdentity(rep, "reply");
    // A reply payload carries the body after an OK status, nothing after an error.
    std::string ok, bad;
    EncodeReply(Result<typename Traits::Reply>(rep), &ok);
    auto back = DecodeReply<typename Traits::Reply>(ok, "reply");
    REQUIRE(back.ok());
    CHECK(Enc(*back) == Enc(rep));
    EncodeReply(Result<typename Traits::Reply>(Error(ErrorCode::OBJECT_NOT_FOUND, "gone")), &bad);
    CHECK(DecodeReply<typename Traits::Reply>(bad, "reply").code() == ErrorCode::OBJECT_NOT_FOUND);
  }
}
TEST_CASE_TEMPLATE_APPLY(op_identity, AllOps);
