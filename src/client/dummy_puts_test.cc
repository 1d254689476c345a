#include "client/dummy_puts.h"

#include <doctest/doctest.h>

namespace mc::client {
namespace {

TEST_CASE("a dummy reaches the master as its standalone client does, over tcp; rdma keeps puts") {
  Config c;
  c.cluster.master = "10.0.0.1:50051";
  c.cluster.auth_token = "secret";
  c.cluster.rpc_retries = 3;
  c.client.transfer_timeout_us = 7;
  c.tls.ca = "/etc/ca.pem";
  c.tls.verify_peer = true;
  Config d = DirectPutsConfig(DirectPutsSettings(c));
  CHECK(d.cluster.master == c.cluster.master);
  CHECK(d.cluster.auth_token == "secret");
  CHECK(d.cluster.rpc_retries == 3);
  CHECK(d.client.transfer_timeout_us == 7);
  CHECK(d.tls.ca == "/etc/ca.pem");
  CHECK(d.tls.verify_peer);
  CHECK(d.cluster.protocol == "tcp");
  c.cluster.protocol = "rdma";
  CHECK(DirectPutsSettings(c).master.empty());
}

}  // namespace
}  // namespace mc::client
