#include "ha/etcd_grpc.h"

#include <unistd.h>

#include <doctest/doctest.h>

#include "net/socket.h"

namespace mc::ha {

TEST_CASE("a fenced append encodes as etcd's TxnRequest protobuf") {
  Txn txn;
  txn.compare.push_back({.target = Compare::Target::kCreate, .key = "k", .number = 5});
  txn.success.push_back({.kind = TxnOp::Kind::kPut, .key = "k", .value = "v"});
  // compare 1 {result 1: 0, target 2: CREATE, key 3: "k", create_revision 5: 5},
  // success 2 {request_put 2 {key 1: "k", value 2: "v"}}.
  const std::string want("\x0a\x09\x08\x00\x10\x01\x1a\x01k\x28\x05"
                         "\x12\x08\x12\x06\x0a\x01k\x12\x01v",
                         21);
  CHECK(EncodeTxnRequest(txn) == want);
}

TEST_CASE("a delete, a lease and a value compare encode in their own fields") {
  Txn txn;
  txn.compare.push_back({.target = Compare::Target::kValue, .key = "a", .value = "x"});
  txn.success.push_back({.kind = TxnOp::Kind::kDeleteRange, .key = "a", .range_end = "b"});
  txn.failure.push_back({.kind = TxnOp::Kind::kPut, .key = "c", .value = "", .lease = 300});
  const std::string got = EncodeTxnRequest(txn);
  // compare {result 0, target VALUE 3, key "a", value 7: "x"}
  CHECK(got.substr(0, 12) == std::string("\x0a\x0a\x08\x00\x10\x03\x1a\x01" "a\x3a\x01x", 12));
  // success {request_delete_range 3 {key "a", range_end 2: "b"}}
  CHECK(got.substr(12, 10) == std::string("\x12\x08\x1a\x06\x0a\x01" "a\x12\x01" "b", 10));
  // failure 3 {request_put {key "c", value "", lease 3: 300 (varint ac 02)}}
  CHECK(got.substr(22) == std::string("\x1a\x0a\x12\x08\x0a\x01" "c\x12\x00\x18\xac\x02", 12));
}

TEST_CASE("mod revision and lease compares carry their number in their own oneof field") {
  Txn txn;
  txn.compare.push_back({.target = Compare::Target::kMod, .key = "a", .number = 7});
  txn.compare.push_back({.target = Compare::Target::kLease, .key = "a", .number = 9});
  // {result 0, target MOD 2, key "a", mod_revision 6: 7}, {..., LEASE 4, ..., lease 8: 9}
  CHECK(EncodeTxnRequest(txn) == std::string("\x0a\x09\x08\x00\x10\x02\x1a\x01" "a\x30\x07"
                                             "\x0a\x09\x08\x00\x10\x04\x1a\x01" "a\x40\x09",
                                             22));
}

TEST_CASE("a TxnResponse gives its revision and whether the compares held") {
  // header 1 {cluster_id 1: 7, revision 3: 150}, succeeded 2: true,
  // responses 3: one (skipped).
  const std::string reply("\x0a\x05\x08\x07\x18\x96\x01\x10\x01\x1a\x02\x22\x00", 13);
  auto r = DecodeTxnResponse(reply);
  REQUIRE(r.ok());
  CHECK(r->succeeded);
  CHECK(r->revision == 150);
  auto refused = DecodeTxnResponse(std::string("\x0a\x02\x18\x09", 4));
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->succeeded);
  CHECK(refused->revision == 9);
}

TEST_CASE("a truncated or malformed TxnResponse is a protocol error") {
  CHECK(DecodeTxnResponse(std::string("\x0a\x05\x08", 3)).status().code() ==
        ErrorCode::PROTOCOL_ERROR);
  CHECK(DecodeTxnResponse(std::string("\x10\xff", 2)).status().code() ==
        ErrorCode::PROTOCOL_ERROR);
  CHECK(DecodeTxnResponse(std::string("\x0b", 1)).status().code() == ErrorCode::PROTOCOL_ERROR);
}

TEST_CASE("a range encodes as etcd's RangeRequest; a lone key leaves out the end and limit") {
  // key 1: "a", range_end 2: "b", limit 3: 300 (varint ac 02).
  CHECK(EncodeRangeRequest("a", "b", 300) == std::string("\x0a\x01" "a\x12\x01" "b\x18\xac\x02", 9));
  CHECK(EncodeRangeRequest("k", "", 0) == std::string("\x0a\x01k", 3));
}

TEST_CASE("a RangeResponse gives its key-values, with revisions and lease, and more") {
  // header 1 {revision 3: 9}, kvs 2 {key 1: "k", create_revision 2: 4,
  // mod_revision 3: 150, version 4: 2, value 5: "v\0w", lease 6: 7},
  // kvs 2 {key 1: "z"}, more 3: true, count 4: 3.
  const std::string reply("\x0a\x02\x18\x09"
                          "\x12\x11\x0a\x01k\x10\x04\x18\x96\x01\x20\x02\x2a\x03v\x00w\x30\x07"
                          "\x12\x03\x0a\x01z"
                          "\x18\x01\x20\x03",
                          32);
  auto r = DecodeRangeResponse(reply);
  REQUIRE(r.ok());
  REQUIRE(r->kvs.size() == 2);
  CHECK(r->kvs[0].key == "k");
  CHECK(r->kvs[0].create_revision == 4);
  CHECK(r->kvs[0].mod_revision == 150);
  CHECK(r->kvs[0].value == std::string("v\0w", 3));
  CHECK(r->kvs[0].lease == 7);
  CHECK(r->kvs[1].key == "z");
  CHECK(r->kvs[1].value.empty());
  CHECK(r->more);
  auto empty = DecodeRangeResponse(std::string("\x0a\x02\x18\x09", 4));
  REQUIRE(empty.ok());
  CHECK(empty->kvs.empty());
  CHECK_FALSE(empty->more);
  // A key-value cut short, and a length past the end.
  CHECK(DecodeRangeResponse(std::string("\x12\x03\x0a\x05k", 5)).status().code() ==
        ErrorCode::PROTOCOL_ERROR);
  CHECK(DecodeRangeResponse(std::string("\x12\x09\x0a", 3)).status().code() ==
        ErrorCode::PROTOCOL_ERROR);
}

TEST_CASE("a member that does not answer gRPC is an unanswered txn, not a refusal") {
  // A port nobody listens on (connect refused at once).
  auto kv = EtcdGrpc::Open("127.0.0.1:1", {.connect_timeout_us = 200000,
                                           .request_timeout_us = 200000});
  REQUIRE(kv.ok());
  Txn txn;
  txn.success.push_back({.kind = TxnOp::Kind::kPut, .key = "k", .value = "v"});
  for (int i = 0; i < kGrpcFailuresBeforeGateway; ++i) {
    CHECK((*kv)->Commit(txn).status().code() == ErrorCode::RPC_FAIL);
  }
  // Then one try goes to the gateway (which does not answer either).
  CHECK((*kv)->Commit(txn).status().code() == ErrorCode::RPC_FAIL);
  CHECK((*kv)->stats().grpc_failures == kGrpcFailuresBeforeGateway);
  CHECK((*kv)->stats().gateway_calls == 1);
}

TEST_CASE("a silent member holds the raft leader probe for its short timeout, not a request's") {
  // A listening socket that is never accepted from: connects, never answers.
  auto fd = net::ListenTcp("127.0.0.1", 0, 8);
  REQUIRE(fd.ok());
  auto http = EtcdHttp::Open("127.0.0.1:" + std::to_string(net::LocalPort(*fd)),
                             {.connect_timeout_us = 60'000'000, .request_timeout_us = 60'000'000});
  REQUIRE(http.ok());
  const uint64_t start = net::MonotonicUs();
  CHECK((*http)->RaftLeaderEndpoint().status().code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  // Generous against a loaded host; the request timeout would be 60 s.
  CHECK(net::MonotonicUs() - start < 30'000'000);
  ::close(*fd);
}

}  // namespace mc::ha
