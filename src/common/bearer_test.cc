#include "common/bearer.h"

#include <doctest/doctest.h>

TEST_CASE("a bearer header matches only the exact token") {
  CHECK(mc::BearerAuthorized("", ""));  // no token configured: open
  CHECK(mc::BearerAuthorized("anything", ""));
  CHECK(mc::BearerAuthorized("Bearer s3cret", "s3cret"));
  CHECK(mc::BearerAuthorized("bearer s3cret", "s3cret"));
  CHECK_FALSE(mc::BearerAuthorized("", "s3cret"));
  CHECK_FALSE(mc::BearerAuthorized("Bearer s3cre", "s3cret"));
  CHECK_FALSE(mc::BearerAuthorized("Bearer s3cret ", "s3cret"));
  CHECK_FALSE(mc::BearerAuthorized("Basic s3cret", "s3cret"));
  CHECK_FALSE(mc::BearerAuthorized("s3cret", "s3cret"));
}

TEST_CASE("a guard counts what it refuses") {
  mc::BearerGuard open("test", "");
  CHECK_FALSE(open.enabled());
  CHECK(open.Admit("", "127.0.0.1:1", "PUT", "/metadata"));
  mc::BearerGuard guard("test", "tok");
  CHECK(guard.enabled());
  CHECK(guard.Admit("Bearer tok", "127.0.0.1:1", "PUT", "/metadata"));
  CHECK_FALSE(guard.Admit("Bearer no", "127.0.0.1:1", "PUT", "/metadata"));
  CHECK_FALSE(guard.Admit("", "127.0.0.1:1", "DELETE", "/metadata"));
  CHECK(guard.refused() == 2);
}
