// Status and Result<T>: errors as values across module boundaries.
//
// A Status is OK or an ErrorCode plus a human message naming what was wrong.
// Result<T> holds a T or a non-OK Status (the shape of std::expected, which
// g++ 12 lacks in C++20). Both are plain values: not thread-safe to mutate
// from two threads, safe to copy between threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

#include "common/error_code.h"

namespace mc {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::OK; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OBJECT_NOT_FOUND (-704): key 'a' not found"; "OK" when ok.
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::OK;
  std::string message_;
};

inline Status Error(ErrorCode code, std::string message) {
  return Status(code, std::move(message));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "a Result built from a Status must carry an error");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  const Status& status() const { return status_; }
  ErrorCode code() const { return status_.code(); }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  T value_or(T fallback) const { return ok() ? *value_ : std::move(fallback); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace mc

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define MC_RETURN_IF_ERROR(expr)           \
  do {                                     \
    ::mc::Status _mc_st = (expr);          \
    if (!_mc_st.ok()) return _mc_st;       \
  } while (0)

// Declares `lhs` from a Result expression, or returns its Status.
#define MC_CONCAT_INNER(a, b) a##b
#define MC_CONCAT(a, b) MC_CONCAT_INNER(a, b)
#define MC_ASSIGN_OR_RETURN(lhs, expr)                          \
  auto MC_CONCAT(_mc_res_, __LINE__) = (expr);                  \
  if (!MC_CONCAT(_mc_res_, __LINE__).ok())                      \
    return MC_CONCAT(_mc_res_, __LINE__).status();              \
  lhs = std::move(MC_CONCAT(_mc_res_, __LINE__)).value()
