// The chain structure of a trace, the figures that decide which eviction
// ideas can work on it: how many chains (requests grouped by their first
// block, a conversation in a multi-turn trace) are never continued, how
// likely a chain seen k times is to come back, and after how many newly
// stored blocks (the cache's clock: what pushes a chain out of LRU).
#pragma once

#include <cstdint>
#include <vector>

#include "eviction/trace.h"

namespace mc::bench {

// Turns counted separately up to this one; later turns are pooled with it.
inline constexpr size_t kChainTurnsShown = 8;

struct TurnFigures {
  uint64_t requests = 0;       // requests that are turn k of their chain
  uint64_t continued = 0;      // of them, followed by a turn k+1
  // Median, over continued requests, of the blocks first stored between
  // this turn and the next (0 if none continued).
  uint64_t median_gap_new_blocks = 0;
};

struct ChainFigures {
  uint64_t chains = 0;            // distinct first blocks
  uint64_t one_shot_chains = 0;   // chains of a single request
  uint64_t one_shot_blocks = 0;   // blocks of those requests
  uint64_t new_blocks = 0;        // distinct blocks (each stored first once)
  // turns[k - 1] for turn k (1-based), the last entry pooling later turns.
  std::vector<TurnFigures> turns;
};

ChainFigures SummarizeChains(const Trace& trace);

}  // namespace mc::bench
