// libFuzzer target for the decoders of the replica operations' messages
// (msg/ops_messages.h: upserts reuse PutStart's, tasks, clears, regex
// removal). The first input byte picks the type; the rest is the bytes.
// Each decoder must return a value or PROTOCOL_ERROR, and a value must
// re-encode and decode to the same bytes. Run: tests/fuzz/run_fuzz.sh ops_fuzz.
#include <cstdint>
#include <string>

#include "codec_roundtrip.h"
#include "proto/codec.h"

using namespace mc;
using namespace mc::proto;

using mc::fuzz::Check;
using mc::fuzz::CheckReply;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 12) {
    case 0: Check<msg::CreateCopyTaskRequest>(bytes); break;
    case 1: Check<msg::CreateMoveTaskRequest>(bytes); break;
    case 2: Check<msg::TaskRequest>(bytes); break;
    case 3: Check<msg::TaskInfo>(bytes); break;
    case 4: Check<msg::TaskStartReply>(bytes); break;
    case 5: Check<msg::TaskEndRequest>(bytes); break;
    case 6: Check<msg::ReplicaClearRequest>(bytes); break;
    case 7: Check<msg::ReplicaClearReply>(bytes); break;
    case 8: Check<msg::RemoveByRegexRequest>(bytes); break;
    case 9: Check<msg::RemoveByRegexReply>(bytes); break;
    case 10: CheckReply<msg::TaskStartReply>(bytes); break;
    default: CheckReply<msg::TaskInfo>(bytes); break;
  }
  return 0;
}
