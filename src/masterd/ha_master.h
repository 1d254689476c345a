// `mooncake master --ha-etcd URLS`: a master in an HA group on etcd
// (mooncake-master(1), HIGH AVAILABILITY).
//
// Every master of the group starts as a standby: its admin HTTP port
// answers (/role says "standby"), its RPC port is closed, and it follows
// the leader's log (ha::FencedLog) into an HaImage. When the leader key is
// free it campaigns (ha::Election); the winner reads the log to its end
// (nobody else can append once it holds the key), loads the image into its
// MasterState, starts shipping its own changes (HaLog) and opens its RPC
// port. A leader whose lease it can no longer prove (LeaseClock) or whose
// log write etcd fenced stops acknowledging at once, closes its RPC port and
// exits with kLostLeadershipExit, for its supervisor to restart it as a
// standby: a process that was leader never serves again without reloading.
// On a stop signal the leader resigns (revokes its lease) so a standby
// takes over without waiting for the TTL.
#pragma once

#include "config/config.h"

namespace mc::masterd {

// The exit code of a master that lost its leadership (EX_TEMPFAIL).
constexpr int kLostLeadershipExit = 75;

// Returns the process exit code.
int RunHaMaster(const Config& config);

}  // namespace mc::masterd
