// Test helpers for the HA log's unit tests. Not thread-safe.
#pragma once

#include <doctest/doctest.h>

#include "ha/fenced_log.h"
#include "masterd/ha_follow.h"
#include "masterd/ha_image.h"

namespace mc::masterd::testing {

// A standby's image: the committed log to its end, through the snapshot
// when the log was trimmed (FollowHaLog, as ha_master.cc's standby reads it).
inline HaImage FollowToEnd(ha::EtcdKv& kv, const ha::HaKeys& keys) {
  ha::FencedLog reader(kv, keys);
  HaImage image;
  bool caught_up = false;
  while (!caught_up) REQUIRE(FollowHaLog(reader, image, &caught_up).ok());
  return image;
}

}  // namespace mc::masterd::testing
