#include "proto/codec.h"

namespace mc::proto {

void Encode(Writer& w, const bool& v) { w.Bool(v); }
void Decode(Reader& r, bool* v) { *v = r.Bool("bool"); }

void Encode(Writer& w, const Status& v) {
  w.I32(static_cast<int32_t>(v.code()));
  std::string_view m = v.ok() ? std::string_view() : std::string_view(v.message());
  w.Str(m.substr(0, kMaxMessageBytes));
}
void Decode(Reader& r, Status* v) {
  int32_t code = r.I32("status code");
  std::string msg;
  r.Str(&msg, kMaxMessageBytes, "status message");
  if (!r.ok()) return;
  // Unknown codes are kept as they are: a newer peer may add codes, and any
  // non-zero code is an error to an older one.
  *v = code == 0 ? Status() : Status(static_cast<ErrorCode>(code), std::move(msg));
}

void FieldReader::operator()(msg::ReplicaStatus& v, const char* name) {
  const uint8_t s = r.U8(name);
  if (r.ok() && s != static_cast<uint8_t>(msg::ReplicaStatus::kProcessing) &&
      s != static_cast<uint8_t>(msg::ReplicaStatus::kComplete)) {
    return r.Fail(name, "unknown replica status");
  }
  v = static_cast<msg::ReplicaStatus>(s);
}

void EncodeErrorReply(const Status& status, std::string* out) {
  Writer w(out);
  Encode(w, status);
}

}  // namespace mc::proto
