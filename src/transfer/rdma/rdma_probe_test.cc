// The probe against the kernel's own account of RDMA, /sys/class: with no
// infiniband_verbs class the kernel has no RDMA (libibverbs fails with
// ENOSYS, this host's case in a container); with it, the devices listed are
// exactly those under /sys/class/infiniband (the soft-RoCE guest's rxe0).
#include "transfer/rdma/rdma_probe.h"

#include <rdma/rdma_cma.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<std::string> SysfsDevices() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("device listing agrees with the kernel's sysfs, with RDMA support or without") {
  auto devices = mc::transfer::ListRdmaDevices();
  if (!fs::exists("/sys/class/infiniband_verbs")) {
    REQUIRE(!devices.ok());
    CHECK(devices.code() == mc::ErrorCode::NOT_SUPPORTED);
    CHECK(devices.status().message().find("ENOSYS") != std::string::npos);
  } else {
    REQUIRE(devices.ok());
    std::vector<std::string> listed = *devices;
    std::sort(listed.begin(), listed.end());
    CHECK(listed == SysfsDevices());
  }
}

TEST_CASE("rdma_cm event names come from the linked librdmacm") {
  CHECK(mc::transfer::RdmaCmEventName(RDMA_CM_EVENT_ESTABLISHED) == "RDMA_CM_EVENT_ESTABLISHED");
  CHECK(mc::transfer::RdmaCmEventName(RDMA_CM_EVENT_ADDR_RESOLVED) ==
        "RDMA_CM_EVENT_ADDR_RESOLVED");
}

TEST_CASE("the provider list says whether providers are linked in or loaded at run time") {
  const std::string providers = mc::transfer::RdmaProviders();
  const std::string linked = " (linked in)";
  if (providers.size() > linked.size() &&
      providers.compare(providers.size() - linked.size(), linked.size(), linked) == 0) {
    // mlx5,...,rxe,siw: names separated by commas, none empty.
    const std::string names = providers.substr(0, providers.size() - linked.size());
    CHECK(names.find(",,") == std::string::npos);
    CHECK(names.front() != ',');
    CHECK(names.back() != ',');
  } else {
    CHECK(providers == "loaded at run time by the shared libibverbs");
  }
}
