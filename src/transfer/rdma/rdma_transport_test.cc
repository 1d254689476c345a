// RdmaTransport::Create over the host's real libibverbs. The expectation of
// each case follows from the devices libibverbs lists, so both branches
// (a host with RDMA devices, e.g. the soft-RoCE guest, and one without, e.g.
// a container) assert something; the fake NICs of verbs_fake.h cover the
// rest of the engine in rdma_engine_test.cc.
#include "transfer/rdma/rdma_transport.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "transfer/rdma/verbs.h"

using namespace mc::transfer;
using mc::ErrorCode;

namespace {

std::vector<std::string> HostDevices() {
  auto devices = SystemVerbs()->ListDevices();
  REQUIRE(devices.ok());  // no kernel support (ENOSYS) lists no device, not an error
  return *devices;
}

}  // namespace

TEST_CASE("the rdma transport opens every host device, or answers NOT_SUPPORTED with none") {
  const auto devices = HostDevices();
  CAPTURE(devices.size());
  auto rdma = RdmaTransport::Create({});
  if (devices.empty()) {
    REQUIRE(!rdma.ok());
    CHECK(rdma.code() == ErrorCode::NOT_SUPPORTED);
    CHECK(rdma.status().message().find("no RDMA device") != std::string::npos);
  } else if (rdma.ok()) {
    CHECK((*rdma)->device_names() == devices);
  } else {
    // A device whose port is not ACTIVE fails the open, naming the device.
    bool named = false;
    for (const auto& d : devices) named |= rdma.status().message().find(d) != std::string::npos;
    CHECK(named);
  }
}

TEST_CASE("the rdma transport names a listed device that is missing and those present") {
  const auto devices = HostDevices();
  auto rdma = RdmaTransport::Create({.devices = "mlx5_no_such_dev"});
  REQUIRE(!rdma.ok());
  CHECK(rdma.code() == ErrorCode::INVALID_PARAMS);
  const std::string& msg = rdma.status().message();
  CHECK(msg.find("mlx5_no_such_dev") != std::string::npos);
  if (devices.empty()) {
    CHECK(msg.find("present: none") != std::string::npos);
  } else {
    for (const auto& d : devices) CHECK(msg.find(d) != std::string::npos);
  }
}
