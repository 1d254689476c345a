// FollowHaLog: how a standby (and a new leader, before it writes) reads the
// HA log into its HaImage: entries in order after the image's, through the
// snapshot when the log was trimmed past it, stopping at the first gap (an
// entry a pipelining leader has not written yet, or never will: what lies
// past a gap was never acknowledged, see ha_log.h).
//
// Not thread-safe: one follower per FencedLog and image.
#pragma once

#include "common/result.h"
#include "ha/fenced_log.h"
#include "masterd/ha_image.h"

namespace mc::masterd {

// Log reads one FollowHaLog makes at most (each up to
// ha::kMaxEntriesPerRead entries) before it returns, so a standby far
// behind still looks at the leader key between rounds.
constexpr int kMaxReadsPerFollow = 64;

// Applies what the log holds past `image`'s entry. `caught_up`: the
// committed log has nothing more (its end, or a gap). INTERNAL_ERROR when an
// entry does not apply (the caller reloads from scratch).
Status FollowHaLog(ha::FencedLog& log, HaImage& image, bool* caught_up);

}  // namespace mc::masterd
