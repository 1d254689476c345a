// The reference's `mooncake_master` and `mooncake_client` command lines, as
// far as they have no setting of their own here.
//
// An operator's unit file, Helm chart or script starts the reference master
// with its gflags (`-v=1 -port=50051 --rpc_thread_num=8 --enable_gc=...`) or
// `--config_path master.json`. Flags whose meaning we have under the same
// name are registry settings (registry.cc lists them with --rpc_port-style
// aliases). Every other flag of the reference (0.3.12.post1 and its newest
// code) has a row here saying what it does on this master (and the
// standalone client's three such flags a row in a table of their own):
//   - kNoEffect: a tuning knob of the reference's own machinery (thread
//     pools, task queues, snapshot children); accepted with any value of its
//     type, logged at start as having no effect and why;
//   - kOffOnly: a feature switch of a feature not built here; accepted while
//     off, refused when turned on, naming the flag and the reason;
//   - kChoice: a value from a list; `choices` are accepted (with a note),
//     `refused` are refused with the reason, anything else is an error;
//   - kSetting: the same value under another name here (`setting`,
//     "section.key"); kInterface: rpc_interface, resolved to rpc_address.
// Nothing is dropped silently: each flag accepted without effect leaves a
// note the command logs at INFO when it starts.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "config/config.h"

namespace mc::config {

enum class RefKind { kNoEffect, kOffOnly, kChoice, kSetting, kInterface, kLogVerbosity,
                     kLogMinLevel };

// The type gflags gives the flag; values are checked against it.
enum class RefType { kBool, kInt, kUint, kDouble, kString };

struct RefFlag {
  const char* name;       // "rpc_thread_num" (flag --rpc_thread_num, JSON key)
  RefKind kind;
  RefType type;
  const char* why;        // why it has no effect, or why it is refused
  const char* choices = nullptr;  // kChoice: accepted values, '|' separated
  const char* refused = nullptr;  // kChoice: known values refused with `why`
  const char* setting = nullptr;  // kSetting: "master.client_ttl"
};

std::span<const RefFlag> RefMasterFlags();
// The same for the standalone client (the reference's real_client_main.cpp);
// its other flags are the client command's own (cmd_client.cc).
std::span<const RefFlag> RefClientFlags();

// nullptr when `name` (without dashes) is not in the table.
const RefFlag* FindRefMasterFlag(std::string_view name);

// Applies one value of a reference flag to `config`. `source` names where it
// came from in messages ("--rpc_thread_num", "master.json: rpc_thread_num").
// A note for the start-up log is appended to `notes` when the flag was
// accepted without effect. Errors (code INVALID_PARAMS) name the source, the
// value and the reason.
Status ApplyRefFlag(const RefFlag& flag, std::string_view value, const std::string& source,
                    Config& config, std::vector<std::string>& notes);

// Applies the reference's master config file (--config_path, JSON): every key
// is a reference flag name (or client_live_ttl_sec, its name for client_ttl),
// a registry setting of the master under its reference spelling, or a row
// above. Unknown keys are refused, naming them.
Status ApplyRefMasterJson(std::string_view text, const std::string& source, Config& config,
                          std::vector<std::string>& notes);

// Rewrites a master or client command line given in gflags style into ours,
// in place: `-port=50051` and `-v=1` (one dash; any name but h) become
// `--port=50051` and `--v=1`; `--noNAME` of a boolean flag NAME (registry key
// or row above) becomes `--NAME=false`. Words after `--` are left alone.
// `args` are the words after the subcommand.
void NormalizeGflagsArgs(std::vector<std::string>& args);

}  // namespace mc::config
