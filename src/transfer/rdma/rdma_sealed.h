// RDMA sealed reads: a one-sided reader's proof that the bytes it read are
// those of the seal it names (mooncake-protocol(7), "RDMA direct reads";
// transfer/write_epochs.h for seals).
//
// The store registers its segment's epoch table for RDMA (the words and
// retired masks after the data) as descriptor buffers named
// "mooncake-epochs:<nonce>", contiguous with the segment's buffers, so a
// peer that does not know them just sees a longer segment.
//
// RdmaSealedReads runs sealed READs over an engine:
//  - learning (seal 0, a get through the master under its lease): a look at
//    the range's words and masks, the data, a second look, each batch after
//    the previous one completed; the read proves the seal both looks agree
//    on (none: OK with seal 0, an ordinary read);
//  - naming a cached seal: the data, then a look; good only when the look
//    gives that seal, else REPLICA_IS_GONE. Counts only grow, so no look
//    before the data is needed (the man page says why RDMA writes, which
//    count nowhere, cannot make a stale seal match).
// Seals it reports are the table's xor the store's nonce (random per store
// start, top bit set), so a seal cached before a restart never matches after.
// A peer that publishes no table fails its ops NOT_SUPPORTED (the client
// sends them over TCP). Thread-safe when the engine is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "transfer/rdma/rdma_desc.h"
#include "transfer/transport.h"

namespace mc::transfer {

class RdmaEngine;

inline constexpr std::string_view kEpochTableBufferPrefix = "mooncake-epochs:";

// Where a peer's epoch table is, from its descriptor.
struct RdmaEpochTable {
  uint64_t data_bytes = 0;  // the segment's data; its table follows
  uint64_t nonce = 0;
  // Segment offsets of region 0's epoch word and retired mask.
  uint64_t words_offset() const;
  uint64_t masks_offset() const;
};

// A fresh nonce: random, top bit set (so seal ^ nonce is never 0).
uint64_t NewEpochNonce();
std::string EpochTableBufferName(uint64_t nonce);
// Bytes from the end of `data_bytes` of data to the end of its mask words:
// what the store registers after the segment.
uint64_t EpochTableTailBytes(uint64_t data_bytes);
// The table `desc` publishes; nullopt when it has none (or a malformed name).
std::optional<RdmaEpochTable> FindEpochTable(const RdmaSegmentDesc& desc);

// Runs `ops` (all sealed READs) over `engine` as described above; sets each
// op's status and seal and returns the first failure.
Status RdmaSealedReads(RdmaEngine& engine, std::span<TransferOp> ops);

}  // namespace mc::transfer
