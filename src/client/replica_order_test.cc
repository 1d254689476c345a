#include "client/replica_order.h"

#include <doctest/doctest.h>

namespace mc::client {
namespace {

msg::ReplicaDesc Replica(std::vector<std::string> endpoints) {
  msg::ReplicaDesc r;
  r.status = msg::ReplicaStatus::kComplete;
  for (auto& e : endpoints) {
    msg::BufferDesc b;
    b.endpoint = e;
    b.hostname = e.substr(0, e.find(':'));
    r.buffers.push_back(b);
  }
  return r;
}

bool NoneLocal(const msg::BufferDesc&) { return false; }

TEST_CASE("a get tries replicas in the master's order when none is local or unreachable") {
  std::vector<msg::ReplicaDesc> rs{Replica({"10.0.0.2:1"}), Replica({"10.0.0.3:1"})};
  ReadPlan plan = ReadOrder(rs, NoneLocal, {});
  CHECK(plan.order == std::vector<size_t>{0, 1});
  CHECK(plan.skipped.ok());
}

TEST_CASE("a get tries same-host replicas first and keeps the master's order otherwise") {
  std::vector<msg::ReplicaDesc> rs{Replica({"10.0.0.2:1"}), Replica({"10.0.0.3:1"}),
                                   Replica({"10.0.0.4:1"}), Replica({"10.0.0.3:2"})};
  auto local = [](const msg::BufferDesc& b) { return b.hostname == "10.0.0.3"; };
  CHECK(ReadOrder(rs, local, {}).order == std::vector<size_t>{1, 3, 0, 2});
}

TEST_CASE("a replica on a store found unreachable is not tried again, and the others are") {
  std::vector<msg::ReplicaDesc> rs{Replica({"10.0.0.2:1"}), Replica({"10.0.0.3:1"})};
  UnreachableStores down{{"10.0.0.2:1", Error(ErrorCode::RPC_TIMEOUT, "recv timed out")}};
  ReadPlan plan = ReadOrder(rs, NoneLocal, down);
  CHECK(plan.order == std::vector<size_t>{1});
  CHECK(plan.skipped.code() == ErrorCode::RPC_TIMEOUT);
}

TEST_CASE("a replica striped over several stores is left out when any one is unreachable") {
  std::vector<msg::ReplicaDesc> rs{Replica({"10.0.0.2:1", "10.0.0.4:1"}),
                                   Replica({"10.0.0.3:1", "10.0.0.5:1"})};
  UnreachableStores down{{"10.0.0.5:1", Error(ErrorCode::TRANSFER_FAIL, "connect timed out")}};
  CHECK(ReadOrder(rs, NoneLocal, down).order == std::vector<size_t>{0});
}

TEST_CASE("when every replica's store is unreachable a get tries none and says why") {
  std::vector<msg::ReplicaDesc> rs{Replica({"10.0.0.2:1"}), Replica({"10.0.0.3:1"})};
  UnreachableStores down{{"10.0.0.3:1", Error(ErrorCode::TRANSFER_FAIL, "connect 10.0.0.3:1")},
                         {"10.0.0.2:1", Error(ErrorCode::RPC_TIMEOUT, "recv timed out")}};
  ReadPlan plan = ReadOrder(rs, NoneLocal, down);
  CHECK(plan.order.empty());
  CHECK(plan.skipped.code() == ErrorCode::RPC_TIMEOUT);  // the first replica's store
  CHECK(plan.skipped.message() == "recv timed out");
}

TEST_CASE("an unreachable store elsewhere does not hide a replica") {
  std::vector<msg::ReplicaDesc> rs{Replica({"10.0.0.2:1"})};
  UnreachableStores down{{"10.0.0.2:2", Error(ErrorCode::RPC_TIMEOUT, "recv timed out")}};
  CHECK(ReadOrder(rs, NoneLocal, down).order == std::vector<size_t>{0});
}

}  // namespace
}  // namespace mc::client
