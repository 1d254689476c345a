#include "msg/messages.h"

#include <cstdio>

namespace mc::msg {

std::string ClientId::ToString() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

}  // namespace mc::msg
