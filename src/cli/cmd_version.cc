// `mooncake version`: the version, how the binary was built, and which RDMA
// devices this host has (through the statically linked providers).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/command.h"
#include "transfer/rdma/rdma_probe.h"

namespace mc::cli {

RunFn SetupVersion(CLI::App& sub) {
  auto devices = std::make_shared<bool>(false);
  sub.add_flag("--rdma-devices", *devices, "Also list the RDMA devices found on this host");
  return [devices] {
    std::printf("mooncake %s\n", MOONCAKE_VERSION);
#if defined(__SANITIZE_ADDRESS__)
    std::printf("build: sanitizers (address, undefined)\n");
#endif
    std::printf("rdma providers: %s\n", transfer::RdmaProviders().c_str());
    if (*devices) {
      auto list = transfer::ListRdmaDevices();
      if (!list.ok()) {
        std::printf("rdma: %s\n", list.status().message().c_str());
      } else if (list->empty()) {
        std::printf("rdma: no devices\n");
      } else {
        for (const auto& name : *list) std::printf("rdma: %s\n", name.c_str());
      }
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace mc::cli
