#include "eviction/trace_stats.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace mc::bench {
namespace {

struct ChainState {
  uint64_t turns = 0;
  uint64_t new_blocks_at_last = 0;  // the new-block clock at its last request
  size_t last_turn_index = 0;       // turns[] index of its last request
};

uint64_t Median(std::vector<uint64_t>& v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

ChainFigures SummarizeChains(const Trace& trace) {
  ChainFigures out;
  out.turns.resize(kChainTurnsShown);
  std::vector<std::vector<uint64_t>> gaps(kChainTurnsShown);
  std::unordered_map<uint64_t, ChainState> chains;  // first block -> state
  std::unordered_map<uint64_t, uint64_t> one_shot_blocks;  // first block -> its blocks
  std::unordered_set<uint64_t> seen;
  for (const TraceRequest& req : trace.requests) {
    if (req.hash_ids.empty()) continue;
    ChainState& c = chains[req.hash_ids.front()];
    if (c.turns > 0) {
      ++out.turns[c.last_turn_index].continued;
      gaps[c.last_turn_index].push_back(out.new_blocks - c.new_blocks_at_last);
      one_shot_blocks.erase(req.hash_ids.front());
    } else {
      one_shot_blocks[req.hash_ids.front()] = req.hash_ids.size();
    }
    ++c.turns;
    c.last_turn_index = std::min<size_t>(c.turns, kChainTurnsShown) - 1;
    ++out.turns[c.last_turn_index].requests;
    for (uint64_t b : req.hash_ids) out.new_blocks += seen.insert(b).second;
    c.new_blocks_at_last = out.new_blocks;
  }
  out.chains = chains.size();
  out.one_shot_chains = one_shot_blocks.size();
  for (const auto& [head, blocks] : one_shot_blocks) out.one_shot_blocks += blocks;
  for (size_t k = 0; k < kChainTurnsShown; ++k) out.turns[k].median_gap_new_blocks = Median(gaps[k]);
  return out;
}

}  // namespace mc::bench
