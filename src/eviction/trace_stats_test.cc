// Chain figures of a hand-made multi-turn trace: chains by first block,
// one-shot ones, continuation per turn and the gap in newly stored blocks.
#include <doctest/doctest.h>

#include "eviction/trace_stats.h"

using namespace mc::bench;

TEST_CASE("chain figures count one-shot chains, continuations and gaps in new blocks") {
  Trace t;
  for (std::vector<uint64_t> ids : std::vector<std::vector<uint64_t>>{
           {1, 2},        // chain 1, turn 1
           {9},           // one-shot chain 9
           {5, 6, 7},     // one-shot chain 5
           {1, 2, 3},     // chain 1, turn 2: 4 new blocks (9 5 6 7) since turn 1
           {8},           // one-shot chain 8
           {1, 2, 3, 4},  // chain 1, turn 3: 1 new block (8) since turn 2
       })
    t.requests.push_back(TraceRequest{.hash_ids = ids});
  ChainFigures f = SummarizeChains(t);
  CHECK(f.chains == 4);
  CHECK(f.one_shot_chains == 3);
  CHECK(f.one_shot_blocks == 5);
  CHECK(f.new_blocks == 9);
  REQUIRE(f.turns.size() == kChainTurnsShown);
  CHECK(f.turns[0].requests == 4);
  CHECK(f.turns[0].continued == 1);
  CHECK(f.turns[0].median_gap_new_blocks == 4);
  CHECK(f.turns[1].requests == 1);
  CHECK(f.turns[1].continued == 1);
  CHECK(f.turns[1].median_gap_new_blocks == 1);
  CHECK(f.turns[2].requests == 1);
  CHECK(f.turns[2].continued == 0);
  CHECK(f.turns[2].median_gap_new_blocks == 0);
}

TEST_CASE("turns past the last one shown are pooled with it") {
  Trace t;
  for (size_t i = 0; i < kChainTurnsShown + 3; ++i) t.requests.push_back(TraceRequest{.hash_ids = {7}});
  ChainFigures f = SummarizeChains(t);
  CHECK(f.turns.back().requests == 4);
  CHECK(f.turns.back().continued == 3);
  CHECK(f.one_shot_chains == 0);
}
