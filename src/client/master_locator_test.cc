#include "client/master_locator.h"

#include <doctest/doctest.h>

namespace mc::client {

TEST_CASE("a single master address needs no locating") {
  CHECK(MasterLocator("127.0.0.1:50051") == nullptr);
  CHECK(MasterLocator(" h:1 , ") == nullptr);
}

TEST_CASE("a plain list of masters keeps the one that answered and moves on when it fails") {
  auto locate = MasterLocator("a:1, b:2;c:3");
  REQUIRE(locate != nullptr);
  CHECK(*locate(false) == "a:1");
  CHECK(*locate(false) == "a:1");
  CHECK(*locate(true) == "b:2");
  CHECK(*locate(false) == "b:2");
  CHECK(*locate(true) == "c:3");
  CHECK(*locate(true) == "a:1");
}

TEST_CASE("an etcd address with no member answering is an error naming etcd") {
  // Port 1 on loopback: refused at once.
  auto locate = MasterLocator("etcd://127.0.0.1:1");
  REQUIRE(locate != nullptr);
  auto where = locate(false);
  REQUIRE_FALSE(where.ok());
  CHECK(where.status().code() == ErrorCode::RPC_FAIL);
  CHECK(where.status().message().find("etcd member") != std::string::npos);
}

}  // namespace mc::client
