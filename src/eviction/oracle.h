// Offline yardsticks beside Belady's MIN: how far perfect *admission* alone
// could take an LRU cache on a trace. They answer "would a better guess of
// which stored blocks are dead be enough?" before anyone builds the guess.
//
// Both replay exact LRU (chain-order touches, as ExactLruHitRatio) but do
// not store some blocks a request would store, knowing the future:
//  - DeadBlockBypassLruHitRatio: a block is stored only if a later request
//    holds it (no dead block ever takes space);
//  - OneShotChainBypassLruHitRatio: a block is stored only if a later
//    request starts with the same chain head (hash_ids[0]): chains that are
//    not continued (one-shot requests, a conversation's last turn) never
//    take space, whatever their blocks' other uses.
// Neither can be reached online; they bound what admission policies can do.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "eviction/trace.h"

namespace mc::bench {

// Marks no later use in NextUses.
inline constexpr uint64_t kNeverAgain = UINT64_MAX;

// next[r][i]: index of the next request after r that holds block i of
// request r, or kNeverAgain.
std::vector<std::vector<uint64_t>> NextUses(const Trace& trace);

// admit[r][i]: whether block i of request r may be stored (same shape as
// NextUses).
using AdmissionMask = std::vector<std::vector<uint8_t>>;

// Exact LRU (as MakeExactLruCache) that stores only the blocks `admit`
// allows; replay it over the trace the mask was made for.
std::unique_ptr<PrefixCache> MakeAdmittingLruCache(size_t capacity_blocks, AdmissionMask admit);

double DeadBlockBypassLruHitRatio(const Trace& trace, size_t capacity_blocks);
double OneShotChainBypassLruHitRatio(const Trace& trace, size_t capacity_blocks);

}  // namespace mc::bench
