// libFuzzer target for the master RPC decoders: the frame header, the
// handshake payloads and every request/reply payload. The first input byte
// picks the decoder (every request and reply type of OpTraits, the
// handshake's, frame headers); the rest is the bytes. Each decoder must return a value
// or PROTOCOL_ERROR; a value must re-encode and decode to the same bytes
// (canonical encoding). Run: tests/fuzz/run_fuzz.sh frame_fuzz.
#include <cstdint>
#include <string>

#include "codec_roundtrip.h"
#include "proto/codec.h"
#include "proto/frame.h"
#include "proto/handshake.h"

using namespace mc;
using namespace mc::proto;

using mc::fuzz::Check;
using mc::fuzz::CheckReply;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 33) {
    case 0: {
      auto h = DecodeFrameHeader(data + 1, size - 1, kMaxPayloadBytes);
      if (h.ok()) {
        uint8_t out[kFrameHeaderBytes];
        EncodeFrameHeader(*h, out);
        auto back = DecodeFrameHeader(out, sizeof out, kMaxPayloadBytes);
        if (!back.ok() || !(*back == *h)) std::abort();
      }
      break;
    }
    case 1: Check<msg::MountSegmentRequest>(bytes); break;
    case 2: Check<msg::UnmountSegmentRequest>(bytes); break;
    case 3:  // TransferReport opens with a ClientId too, so Ping's seeds suit it
      Check<msg::PingRequest>(bytes);
      Check<msg::TransferReport>(bytes);
      break;
    case 4: Check<msg::PingReply>(bytes); break;
    case 5: Check<msg::PutStartRequest>(bytes); break;
    case 6: Check<msg::PutStartReply>(bytes); break;
    case 7: Check<msg::KeyRequest>(bytes); break;
    case 8: Check<msg::GetReplicaListReply>(bytes); break;
    case 9: Check<msg::RemoveRequest>(bytes); break;
    case 10: Check<msg::RemoveAllReply>(bytes); break;
    case 11: Check<msg::ListKeysRequest>(bytes); break;
    case 12: Check<msg::ListKeysReply>(bytes); break;
    case 13: Check<msg::ClusterStatusReply>(bytes); break;
    case 14: Check<msg::Batch<msg::PutStartRequest>>(bytes); break;
    case 15: Check<msg::Batch<msg::KeyRequest>>(bytes); break;
    case 16: Check<msg::Batch<msg::RemoveRequest>>(bytes); break;
    case 17: Check<msg::Batch<msg::BatchItem<msg::PutStartReply>>>(bytes); break;
    case 18: Check<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>>(bytes); break;
    case 19: Check<msg::Batch<msg::BatchItem<bool>>>(bytes); break;
    case 20: Check<msg::Batch<Status>>(bytes); break;
    case 21: Check<HelloRequest>(bytes); break;
    case 22: Check<HelloReply>(bytes); break;
    case 23: Check<AuthRequest>(bytes); break;
    case 24: Check<AuthReply>(bytes); break;
    case 25: CheckReply<msg::GetReplicaListReply>(bytes); break;
    case 26: CheckReply<msg::Batch<msg::BatchItem<msg::PutStartReply>>>(bytes); break;
    case 27: CheckReply<msg::ClusterStatusReply>(bytes); break;
    case 28: Check<msg::Batch<msg::PutStartExRequest>>(bytes); break;
    case 29: CheckReply<Empty>(bytes); break;
    case 30: CheckReply<bool>(bytes); break;
    case 31: CheckReply<HelloReply>(bytes); break;
    default: CheckReply<AuthReply>(bytes); break;
  }
  return 0;
}
