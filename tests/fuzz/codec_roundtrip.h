// What the codec fuzzers check of every decoded payload: a decoder returns a
// value or PROTOCOL_ERROR, and a value re-encodes to bytes that decode and
// encode again to the same bytes (canonical encoding).
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

#include "proto/codec.h"

namespace mc::fuzz {

template <typename T>
void Check(std::string_view bytes) {
  T v{};
  Status st = proto::DecodePayload(bytes, &v, "fuzz");
  if (!st.ok()) {
    if (st.code() != ErrorCode::PROTOCOL_ERROR) std::abort();
    return;
  }
  std::string again;
  proto::EncodePayload(v, &again);
  T w{};
  if (!proto::DecodePayload(again, &w, "fuzz").ok()) std::abort();
  std::string third;
  proto::EncodePayload(w, &third);
  if (third != again) std::abort();
}

template <typename T>
void CheckReply(std::string_view bytes) {
  auto r = proto::DecodeReply<T>(bytes, "fuzz");
  if (r.ok()) {
    std::string again;
    proto::EncodeReply(r, &again);
    if (!proto::DecodeReply<T>(again, "fuzz").ok()) std::abort();
  }
}

}  // namespace mc::fuzz
