#include "transfer/rdma_probe.h"
#include <rdma/rdma_cma.h>

#include <doctest/doctest.h>

TEST_CASE("device listing answers without crashing when there is no RDMA hardware") {
  auto devices = mc::transfer::ListRdmaDevices();
  if (!devices.ok()) {
    CHECK(devices.code() == mc::ErrorCode::NOT_SUPPORTED);
  }
  CHECK(mc::transfer::RdmaCmEventName(RDMA_CM_EVENT_ESTABLISHED) == "RDMA_CM_EVENT_ESTABLISHED");
}

TEST_CASE("the provider list is never empty") {
  CHECK(!mc::transfer::RdmaProviders().empty());
}
