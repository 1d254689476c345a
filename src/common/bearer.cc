#include "common/bearer.h"

#include <cctype>

#include "common/crypto.h"
#include "common/log.h"

namespace mc {

bool BearerAuthorized(std::string_view authorization, std::string_view token) {
  if (token.empty()) return true;
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  return ConstantTimeEqual(authorization.substr(kScheme.size()), token);
}

bool BearerGuard::Admit(std::string_view authorization, std::string_view peer,
                        std::string_view method, std::string_view path) {
  if (BearerAuthorized(authorization, token_)) return true;
  refused_.fetch_add(1, std::memory_order_relaxed);
  MC_LOG(WARN) << server_ << ": refused " << method << " " << path << " from " << peer << ": "
               << (authorization.empty() ? "no auth token" : "wrong auth token");
  return false;
}

}  // namespace mc
