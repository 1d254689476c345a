// Test helpers for the masterd unit tests that open a journal.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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

}  // namespace mc::masterd::testing
