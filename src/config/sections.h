// The parts of the config tree a subcommand uses, as bit flags.
#pragma once

namespace mc::config {

enum Section : unsigned {
  kCluster = 1u << 0,
  kMaster = 1u << 1,
  kStore = 1u << 2,
  kClient = 1u << 3,
  kMetadataServer = 1u << 4,
  kLog = 1u << 5,
  kTls = 1u << 6,
  kHa = 1u << 7,
};

// The highest bit, for loops over every section.
constexpr unsigned kLastSection = kHa;

constexpr unsigned kAllSections =
    kCluster | kMaster | kStore | kClient | kMetadataServer | kLog | kTls | kHa;

}  // namespace mc::config
