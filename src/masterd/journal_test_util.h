// Test helpers for the masterd unit tests that open a journal or an HA log.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "master/master_state.h"

namespace mc::masterd::testing {

// A fresh file name under /tmp, removed (with its WAL) at scope exit.
struct TempDb {
  std::string path;
  TempDb() {
    char tmpl[] = "/tmp/mc-journal-test-XXXXXX";
    int fd = ::mkstemp(tmpl);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = tmpl;
    std::remove(path.c_str());
  }
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  }
};

// Everything durable about a state, comparable.
inline std::string Fingerprint(const master::MasterState& s) {
  std::string out;
  for (const auto& seg : s.DumpSegments())
    out += "seg " + seg.desc.name + " " + std::to_string(seg.desc.incarnation) + " " +
           seg.desc.access_key + " " + seg.owner.ToString() + "\n";
  for (const auto& o : s.DumpObjects(true)) {
    out += "obj " + o.key + " " + std::to_string(o.size_bytes) + (o.soft_pin ? " pin" : "");
    for (const auto& r : o.replicas)
      for (const auto& b : r)
        out += " " + b.segment_name + "@" + std::to_string(b.offset) + "+" +
               std::to_string(b.size_bytes);
    out += "\n";
  }
  return out;
}

}  // namespace mc::masterd::testing
