#include "common/result.h"

namespace mc {

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(ErrorCodeName(code_));
  out += " (" + std::to_string(static_cast<int32_t>(code_)) + ")";
  if (!message_.empty()) out += ": " + message_;
  return out;
}

}  // namespace mc
