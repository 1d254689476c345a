// Helpers of the p2p unit tests: engines on 127.0.0.1 with P2PHANDSHAKE.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "p2p/transfer_engine.h"

namespace mc::p2p::testing {

inline std::unique_ptr<TransferEngine> StartEngine(uint64_t timeout_us = 2'000'000,
                                                   bool same_host = true,
                                                   std::string auth_token = "") {
  EngineOptions o;
  o.local_hostname = "127.0.0.1";
  o.metadata_server = std::string(kP2pHandshake);
  o.listen_host = "127.0.0.1";
  o.transfer_timeout_us = timeout_us;
  o.same_host = same_host;
  o.auth_token = std::move(auth_token);
  auto e = TransferEngine::Start(o);
  REQUIRE(e.ok());
  return std::move(e.value());
}

// An engine with protocol rdma on `device` of `verbs` (verbs_fake.h's).
inline std::unique_ptr<TransferEngine> StartRdmaEngine(transfer::Verbs* verbs,
                                                       const std::string& device) {
  EngineOptions o;
  o.local_hostname = "127.0.0.1";
  o.metadata_server = std::string(kP2pHandshake);
  o.listen_host = "127.0.0.1";
  o.transfer_timeout_us = 2'000'000;
  o.protocol = "rdma";
  o.device_name = device;
  o.verbs = verbs;
  auto e = TransferEngine::Start(o);
  REQUIRE(e.ok());
  return std::move(e.value());
}

// n bytes of a pattern that differs by seed.
inline std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * seed + 1);
  return v;
}

inline uint64_t Addr(const std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }

}  // namespace mc::p2p::testing
