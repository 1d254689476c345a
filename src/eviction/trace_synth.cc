#include "eviction/trace_synth.h"

#include <cassert>
#include <cmath>
#include <deque>
#include <random>
#include <unordered_set>

namespace mc::bench {
namespace {

struct Conversation {
  std::vector<uint64_t> chain;
  uint32_t turns = 0;
};

class Generator {
 public:
  Generator(const SyntheticTraceOptions& o, uint64_t seed) : o_(o), rng_(seed) {
    double total = 0;
    for (uint32_t i = 0; i < o_.system_prompts; ++i) {
      prompts_.push_back(Fresh(1 + Below(o_.system_prompt_blocks_max)));
      total += std::pow(double(i + 1), -double(o_.prompt_skew_x100) / 100.0);
      cumulative_.push_back(total);
    }
  }

  Trace Run() {
    Trace trace;
    std::unordered_set<uint64_t> distinct;
    for (uint32_t r = 0; r < o_.requests; ++r) {
      TraceRequest req;
      req.timestamp_ms = r * 250ull;
      req.hash_ids = NextChain();
      req.input_length = req.hash_ids.size() * 512;
      req.output_length = 1 + Below(512);
      trace.total_blocks += req.hash_ids.size();
      distinct.insert(req.hash_ids.begin(), req.hash_ids.end());
      trace.requests.push_back(std::move(req));
    }
    trace.distinct_blocks = distinct.size();
    return trace;
  }

 private:
  uint64_t Below(uint64_t n) { return n ? rng_() % n : 0; }

  std::vector<uint64_t> Fresh(uint64_t n) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < n; ++i) out.push_back(next_block_++);
    return out;
  }

  void Append(std::vector<uint64_t>& chain, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) chain.push_back(next_block_++);
  }

  const std::vector<uint64_t>& PickPrompt() {
    double x = double(rng_() >> 11) / double(1ull << 53) * cumulative_.back();
    size_t i = 0;
    while (i + 1 < cumulative_.size() && cumulative_[i] < x) ++i;
    return prompts_[i];
  }

  std::vector<uint64_t> NextChain() {
    uint64_t roll = Below(100);
    if (roll < o_.percent_scan) return Fresh(1 + Below(o_.scan_blocks_max));
    if (roll < o_.percent_scan + o_.percent_new_conversation || open_.empty()) {
      Conversation c;
      c.chain = PickPrompt();
      Append(c.chain, 1 + Below(o_.user_blocks_max));
      open_.push_back(c);
      if (open_.size() > o_.open_conversations_max) open_.pop_front();
      return c.chain;
    }
    // Recent conversations continue more often than old ones.
    size_t k = open_.size() - 1 - std::min<size_t>(open_.size() - 1, Below(open_.size()) / 2 +
                                                                          Below(open_.size()) / 2);
    Conversation& c = open_[k];
    Append(c.chain, Below(o_.reply_blocks_max + 1) + 1 + Below(o_.user_blocks_max));
    std::vector<uint64_t> chain = c.chain;
    if (++c.turns >= o_.turns_max) open_.erase(open_.begin() + long(k));
    return chain;
  }

  SyntheticTraceOptions o_;
  std::mt19937_64 rng_;
  uint64_t next_block_ = 0;
  std::vector<std::vector<uint64_t>> prompts_;
  std::vector<double> cumulative_;
  std::deque<Conversation> open_;
};

}  // namespace

Trace GenerateSyntheticTrace(const SyntheticTraceOptions& options, uint64_t seed) {
  assert(options.system_prompts > 0);
  return Generator(options, seed).Run();
}

SyntheticTraceOptions SyntheticVariant(uint32_t variant) {
  SyntheticTraceOptions o;
  switch (variant % kSyntheticVariants) {
    case 0:  // the defaults: mixed
      break;
    case 1:  // chatty: long multi-turn conversations, few scans
      o.percent_new_conversation = 20;
      o.percent_scan = 5;
      o.turns_max = 16;
      o.open_conversations_max = 200;
      break;
    case 2:  // scan-heavy: one-off long documents pollute the cache
      o.percent_scan = 40;
      o.scan_blocks_max = 400;
      break;
    case 3:  // prompt-heavy: many skewed system prompts, short chats
      o.system_prompts = 300;
      o.prompt_skew_x100 = 120;
      o.system_prompt_blocks_max = 48;
      o.percent_new_conversation = 60;
      o.turns_max = 3;
      break;
  }
  return o;
}

}  // namespace mc::bench
