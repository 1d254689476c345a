// Seeded synthetic prefix-chain traces, for judging eviction policies on
// workloads other than the shared trace. A request is one of:
//   - a new conversation: a shared system prompt (popular ones more often)
//     followed by fresh user blocks;
//   - the next turn of an open conversation: its previous chain, the reply,
//     and fresh user blocks (extends an earlier prefix);
//   - a one-off scan: a long chain of fresh blocks never seen again.
// Same options and seed give the same trace. Pure, thread-safe.
#pragma once

#include <cstdint>

#include "eviction/trace.h"

namespace mc::bench {

struct SyntheticTraceOptions {
  uint32_t requests = 4000;
  uint32_t system_prompts = 40;
  uint32_t system_prompt_blocks_max = 24;
  // Popularity of system prompts: weight of prompt i is 1 / (i + 1)^skew_x100/100.
  uint32_t prompt_skew_x100 = 100;
  uint32_t user_blocks_max = 12;
  uint32_t reply_blocks_max = 4;
  uint32_t open_conversations_max = 400;  // oldest is dropped beyond this
  uint32_t turns_max = 8;                 // a conversation closes after this
  uint32_t percent_new_conversation = 35;
  uint32_t percent_scan = 15;             // the rest are follow-up turns
  uint32_t scan_blocks_max = 200;
};

Trace GenerateSyntheticTrace(const SyntheticTraceOptions& options, uint64_t seed);

// A few differently shaped option sets (chatty, scan-heavy, prompt-heavy...),
// so tests and the bench cover more than one mix. `variant` wraps around.
SyntheticTraceOptions SyntheticVariant(uint32_t variant);
inline constexpr uint32_t kSyntheticVariants = 4;

}  // namespace mc::bench
