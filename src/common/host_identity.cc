#include "common/host_identity.h"

#include <unistd.h>

#include <fstream>

namespace mc {

const std::string& HostIdentity() {
  static const std::string id = [] {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string boot;
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::getline(in, boot);
    return std::string(host) + "/" + boot;
  }();
  return id;
}

}  // namespace mc
