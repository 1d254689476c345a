// mooncake: one binary, several roles. Parses the command line with CLI11 and
// runs the chosen subcommand. Usage errors print one line and exit 2.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "config/ref_flags.h"

namespace {

struct Entry {
  const char* name;
  const char* description;
  mc::cli::RunFn (*setup)(CLI::App&);
};

constexpr Entry kCommands[] = {
    {"master", "Run the control plane: object index, allocation, leases, eviction",
     mc::cli::SetupMaster},
    {"store", "Contribute memory to the pool and serve transfers from it", mc::cli::SetupStore},
    {"client", "Run the host's standalone client: its segment, and dummy clients for engine ranks",
     mc::cli::SetupClient},
    {"metadata-server", "Run the HTTP metadata key-value service of the transfer engine",
     mc::cli::SetupMetadataServer},
    {"put", "Store an object from a file or stdin", mc::cli::SetupPut},
    {"get", "Fetch an object to stdout or a file", mc::cli::SetupGet},
    {"ls", "List keys, optionally under a prefix", mc::cli::SetupLs},
    {"rm", "Remove objects", mc::cli::SetupRm},
    {"exists", "Exit 0 if a key is present, 1 if not", mc::cli::SetupExists},
    {"bench", "Measure the cluster: throughput and latency", mc::cli::SetupBench},
    {"version", "Print the version and build facts", mc::cli::SetupVersion},
    {"completion", "Print a bash or zsh completion script", mc::cli::SetupCompletion},
};

// The master's state is a few hundred MB of small heap objects (~270 B per
// object). Backed by 4 KiB pages, building it costs one page fault per 4 KiB;
// on some VMs a fault takes ~10 us, and loading 1M objects at start took
// 3.1 s here against 2.0 s with transparent huge pages. glibc's malloc uses
// them (madvise mode is enough) only when the tunable is set before the
// process starts, so `mooncake master` re-executes itself once with it,
// unless GLIBC_TUNABLES is already set (the operator's choice wins).
// top_pad: each I/O thread's arena otherwise grows and shrinks its heap in
// small steps as request buffers come and go, and every regrowth faults
// (and, with huge pages, clears) fresh pages; growing by 64 MiB cut the
// master's CPU per metadata-only put from 10.6 to 6.8 us (batches of 32)
// and 50 to 42 us (single keys) for about 50 MiB more resident memory.
constexpr char kMasterTunables[] = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864";

void UseHugePagesForHeap(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "master") != 0) return;
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (setenv("GLIBC_TUNABLES", kMasterTunables, 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GLIBC_TUNABLES");  // exec failed (no /proc): run as we are
}

}  // namespace

// The reference's program names and the command each one is here.
constexpr std::pair<std::string_view, const char*> kReferenceNames[] = {
    {"mooncake_master", "master"},
    {"mooncake_client", "client"},
    {"mooncake_http_metadata_server", "metadata-server"},
};

// The reference's Python metadata server takes --log-level as Python's level
// names (DEBUG, INFO, WARNING, ERROR, CRITICAL); ours are debug, info, warn
// and error.
void PythonLogLevels(std::vector<std::string>& words) {
  for (size_t i = 2; i < words.size(); ++i) {
    std::string* value = nullptr;
    std::string& w = words[i];
    if (w == "--log-level" && i + 1 < words.size()) {
      value = &words[i + 1];
    } else if (w.rfind("--log-level=", 0) == 0) {
      value = &w;
    }
    if (value == nullptr) continue;
    size_t from = value == &w ? std::strlen("--log-level=") : 0;
    std::string level = value->substr(from);
    for (char& c : level) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (level == "warning") level = "warn";
    if (level == "critical") level = "error";
    *value = value->substr(0, from) + level;
  }
}

// The words of the command line as the subcommands read them: run through a
// link named as one of the reference's programs (mooncake_master,
// mooncake_client, mooncake_http_metadata_server), it is that command here;
// the master's and client's gflags-style words (-port=50051, -v=1,
// --noenable_ha) are rewritten into ours (config/ref_flags.h).
std::vector<std::string> CommandWords(int argc, char** argv) {
  std::vector<std::string> words(argv, argv + argc);
  std::string_view self = argc > 0 ? argv[0] : "mooncake";
  size_t slash = self.rfind('/');
  if (slash != std::string_view::npos) self.remove_prefix(slash + 1);
  for (const auto& [name, command] : kReferenceNames) {
    if (self != name) continue;
    words[0] = "mooncake";
    words.insert(words.begin() + 1, command);
    if (std::string_view(command) == "metadata-server") PythonLogLevels(words);
  }
  if (words.size() > 2 && (words[1] == "master" || words[1] == "client")) {
    std::vector<std::string> rest(words.begin() + 2, words.end());
    mc::config::NormalizeGflagsArgs(rest);
    std::copy(rest.begin(), rest.end(), words.begin() + 2);
  }
  return words;
}

int main(int raw_argc, char** raw_argv) {
  std::vector<std::string> words = CommandWords(raw_argc, raw_argv);
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  int argc = static_cast<int>(words.size());
  char** argv = args.data();
  UseHugePagesForHeap(argc, argv);
  CLI::App app{"mooncake: a distributed in-memory KV-cache store for LLM inference", "mooncake"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("mooncake ") + MOONCAKE_VERSION);
  app.footer("Run 'mooncake COMMAND --help' for the options of one command.");

  std::vector<std::pair<CLI::App*, mc::cli::RunFn>> runs;
  for (const Entry& e : kCommands) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
    runs.emplace_back(sub, e.setup(*sub));
  }

  // CLI11 reports a mistyped command as "a subcommand is required"; name it.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const Entry& e : kCommands) known = known || std::string(argv[1]) == e.name;
    if (!known) {
      std::fprintf(stderr, "mooncake: error: unknown command '%s' (see 'mooncake --help')\n",
                   argv[1]);
      return mc::cli::kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    std::fprintf(stderr, "mooncake: error: %s (see 'mooncake --help')\n", what.c_str());
    return mc::cli::kExitUsage;
  }
  for (auto& [sub, run] : runs) {
    if (sub->parsed()) return run();
  }
  return mc::cli::kExitUsage;  // unreachable: require_subcommand(1)
}
