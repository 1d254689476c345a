// The byte I/O of the master RPC wire format (mooncake-protocol(7)) under
// proto's own names. The coding itself lives in common/byte_io.h, shared
// with the data port's headers and the RDMA descriptor.
#pragma once

#include "common/byte_io.h"

namespace mc::proto {

using Writer = ::mc::ByteWriter;
using Reader = ::mc::ByteReader;

}  // namespace mc::proto
