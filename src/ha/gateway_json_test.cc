#include "ha/gateway_json.h"

#include <doctest/doctest.h>

#include <random>

#include "common/test_seed.h"
#include "ha/etcd_http.h"

namespace mc::ha {

TEST_CASE("an etcd range reply parses into keys, revisions and base64-decoded values") {
  auto j = ParseGatewayJson(
      R"({"header":{"revision":"7"},"kvs":[{"key":"Zm9v","create_revision":"2",)"
      R"("mod_revision":"5","version":"1","value":"YmFy"}],"count":"1","more":true})");
  REQUIRE(j.ok());
  CHECK((*j)["header"]["revision"].Int() == 7);
  const Json& kv = (*j)["kvs"].items.at(0);
  CHECK(kv["create_revision"].Int() == 2);
  CHECK(*Base64Decode(kv["key"].text) == "foo");
  CHECK(*Base64Decode(kv["value"].text) == "bar");
  CHECK((*j)["more"].Bool());
  CHECK((*j)["absent"]["deeper"].Int() == 0);
}

TEST_CASE("malformed gateway JSON is refused as a protocol error naming the line") {
  for (const char* bad : {"{", "{\"a\" 1}", "[1,]x", "\"open", "{\"a\":1} trailing"}) {
    auto j = ParseGatewayJson(bad);
    CHECK_FALSE(j.ok());
    CHECK(j.status().code() == ErrorCode::PROTOCOL_ERROR);
    CHECK(j.status().message().find("etcd gateway JSON: line 1: ") == 0);
  }
  std::string deep(kMaxGatewayJsonDepth + 2, '[');
  CHECK_FALSE(ParseGatewayJson(deep).ok());
}

TEST_CASE("base64 round-trips every byte string and refuses foreign characters") {
  std::mt19937_64 rng(TestSeed("base64 round trip"));
  for (int n = 0; n < 200; ++n) {
    std::string bytes(n % 37, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto back = Base64Decode(Base64Encode(bytes));
    REQUIRE(back.ok());
    CHECK(*back == bytes);
  }
  CHECK(Base64Encode("foo") == "Zm9v");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK_FALSE(Base64Decode("Zm9").ok());
  CHECK_FALSE(Base64Decode("Z!9v").ok());
  CHECK_FALSE(Base64Decode("Z=9v").ok());
}

TEST_CASE("JSON strings escape quotes, backslashes and control bytes") {
  CHECK(JsonString("a\"b\\c\n") == "\"a\\\"b\\\\c\\u000a\"");
  auto back = ParseGatewayJson(JsonString("x\"\\\n\x01y"));
  REQUIRE(back.ok());
  CHECK(back->text == "x\"\\\n\x01y");
}

TEST_CASE("etcd endpoint lists accept URLs, bare host:port, ';' and the etcd:// form") {
  auto a = ParseEtcdEndpoints("http://h1:2379, http://h2:2379/");
  REQUIRE(a.ok());
  CHECK(*a == std::vector<std::string>{"h1:2379", "h2:2379"});
  auto b = ParseEtcdEndpoints("etcd://h1:2379,h2:2379");
  REQUIRE(b.ok());
  CHECK(*b == std::vector<std::string>{"h1:2379", "h2:2379"});
  auto c = ParseEtcdEndpoints("h1:1;h2:2");
  REQUIRE(c.ok());
  CHECK(c->size() == 2);
  CHECK_FALSE(ParseEtcdEndpoints("").ok());
  CHECK_FALSE(ParseEtcdEndpoints("https://h1:2379").ok());
  CHECK_FALSE(ParseEtcdEndpoints("h1").ok());
}

}  // namespace mc::ha
