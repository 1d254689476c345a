// `mooncake completion bash|zsh`: prints a shell completion script built from
// this binary's own command-line definitions (the CLI11 tree main() made), so
// the script offers exactly the commands and options `--help` shows and can
// never drift from them. The Debian package installs its output; see
// mooncake(1), COMPLETION.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"

namespace mc::cli {

namespace {

// What the word after an option (or a positional argument) can be.
enum class ValueKind {
  kNone,    // a flag: no value
  kFile,    // a file name (type name FILE)
  kChoice,  // one of `choices`
  kFree,    // anything (a key, a size, an address): nothing to offer
};

struct Arg {
  std::vector<std::string> names;  // "--output", "-o"; a positional's own name
  std::string help;
  ValueKind kind = ValueKind::kNone;
  std::vector<std::string> choices;
  bool repeats = false;  // a positional taking several words (rm KEY...)
};

struct Command {
  std::string name;
  std::string help;
  std::vector<Arg> options;
  std::vector<Arg> positionals;
};

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// CLI::IsMember shows as "CHOICE:{a,b}" in the type name; settings of the
// config registry check their choices themselves and name them in the help
// text as "(a|b)" (config/registry.h, UnitText).
std::vector<std::string> ChoicesOf(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  if (size_t open = type.find(":{"); open != std::string::npos) {
    size_t close = type.find('}', open);
    if (close != std::string::npos) return Split(type.substr(open + 2, close - open - 2), ',');
  }
  if (type.rfind("CHOICE", 0) != 0) return {};
  const std::string& help = opt.get_description();
  for (size_t open = help.find('('); open != std::string::npos; open = help.find('(', open + 1)) {
    size_t close = help.find(')', open);
    if (close == std::string::npos) break;
    std::string inside = help.substr(open + 1, close - open - 1);
    if (inside.find('|') != std::string::npos) return Split(inside, '|');
  }
  return {};
}

Arg Describe(const CLI::Option& opt) {
  Arg a;
  for (const auto& l : opt.get_lnames()) a.names.push_back("--" + l);
  for (const auto& s : opt.get_snames()) a.names.push_back("-" + s);
  if (a.names.empty()) a.names.push_back(opt.get_name());
  a.help = opt.get_description();
  a.choices = ChoicesOf(opt);
  if (opt.nonpositional() && opt.get_expected_max() == 0) {  // a flag
    a.kind = ValueKind::kNone;
  } else if (!a.choices.empty()) {
    a.kind = ValueKind::kChoice;
  } else if (opt.get_type_name().rfind("FILE", 0) == 0) {
    a.kind = ValueKind::kFile;
  } else {
    a.kind = ValueKind::kFree;
  }
  a.repeats = !opt.nonpositional() && opt.get_items_expected_max() > 1;
  return a;
}

// Hidden options (empty group) are reference-style aliases (--rpc_port) and
// negations (--no-shm); only the negations are worth offering.
bool Offered(const CLI::Option& opt) {
  if (!opt.get_group().empty()) return true;
  for (const auto& l : opt.get_lnames()) {
    if (l.rfind("no-", 0) == 0) return true;
  }
  return false;
}

Command Walk(const CLI::App& app) {
  Command c;
  c.name = app.get_name();
  c.help = app.get_description();
  for (const CLI::Option* opt : app.get_options()) {
    if (!Offered(*opt)) continue;
    (opt->nonpositional() ? c.options : c.positionals).push_back(Describe(*opt));
  }
  return c;
}

std::string Join(const std::vector<std::string>& words, const char* sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// ---- bash ----

// The `case` arm completing the value of `a`, or "" for a flag.
std::string BashValueArm(const Arg& a) {
  switch (a.kind) {
    case ValueKind::kNone: return "";
    case ValueKind::kFile: return "_mooncake_files; return ;;";
    case ValueKind::kChoice:
      return "COMPREPLY=($(compgen -W \"" + Join(a.choices, " ") + "\" -- \"$cur\")); return ;;";
    case ValueKind::kFree: return "return ;;";
  }
  return "";
}

std::string BashCommand(const Command& c) {
  std::string out = "    " + c.name + ")\n      case $opt in\n";
  std::vector<std::string> all;
  std::vector<std::string> free;  // options whose value nothing can guess
  for (const Arg& a : c.options) {
    for (const auto& n : a.names) all.push_back(n);
    if (a.kind == ValueKind::kFree) {
      free.insert(free.end(), a.names.begin(), a.names.end());
      continue;
    }
    std::string arm = BashValueArm(a);
    if (!arm.empty()) out += "        " + Join(a.names, "|") + ") " + arm + "\n";
  }
  if (!free.empty()) out += "        " + Join(free, "|") + ") return ;;\n";
  out += "      esac\n";
  out += "      if [[ $cur == -* ]]; then\n        COMPREPLY=($(compgen -W \"" + Join(all, " ") +
         "\" -- \"$cur\")); return\n      fi\n";
  // Which positional the cursor is on: words after the command that are
  // neither options nor the values of options taking one.
  out += "      case $(_mooncake_positional \"" + c.name + "\") in\n";
  for (size_t i = 0; i < c.positionals.size(); ++i) {
    const Arg& p = c.positionals[i];
    std::string arm = BashValueArm(p);
    if (arm.empty()) continue;
    std::string index = std::to_string(i);
    out += "        " + (p.repeats ? std::string("*") : index) + ") " + arm + "\n";
    if (p.repeats) break;  // a repeating positional takes every word after it
  }
  out += "      esac\n      ;;\n";
  return out;
}

// Options taking a value, per command, for _mooncake_positional.
std::string BashValueOptions(const std::vector<Command>& cmds) {
  std::string out;
  for (const Command& c : cmds) {
    std::vector<std::string> names;
    for (const Arg& a : c.options) {
      if (a.kind == ValueKind::kNone) continue;
      for (const auto& n : a.names) names.push_back(n);
    }
    out += "    " + c.name + ") takes=\" " + Join(names, " ") + " \" ;;\n";
  }
  return out;
}

std::string RenderBash(const Command& root, const std::vector<Command>& cmds) {
  std::vector<std::string> top;
  for (const Command& c : cmds) top.push_back(c.name);
  for (const Arg& a : root.options) {
    for (const auto& n : a.names) top.push_back(n);
  }
  std::string out;
  out += "# bash completion for mooncake(1), printed by `mooncake completion bash`\n";
  out += "# (mooncake " MOONCAKE_VERSION ") from the binary's own option definitions:\n";
  out += "# regenerate it rather than edit it.\n\n";
  out +=
      "_mooncake_files() {\n"
      "  compopt -o filenames 2>/dev/null\n"
      "  COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "}\n\n"
      "# Prints the index of the positional argument under the cursor (0: the\n"
      "# first after the command), skipping options and the values they take.\n"
      "_mooncake_positional() {\n"
      "  local takes=\"\" n=0 i w\n"
      "  case $1 in\n" +
      BashValueOptions(cmds) +
      "  esac\n"
      "  for ((i = cmd_index + 1; i < COMP_CWORD; i++)); do\n"
      "    w=${COMP_WORDS[i]}\n"
      "    if [[ $w == -* && $w != - ]]; then\n"
      "      if [[ ${COMP_WORDS[i + 1]} == = ]]; then\n"
      "        i=$((i + 2))\n"
      "      elif [[ $takes == *\" $w \"* ]]; then\n"
      "        i=$((i + 1))\n"
      "      fi\n"
      "      continue\n"
      "    fi\n"
      "    n=$((n + 1))\n"
      "  done\n"
      "  echo $n\n"
      "}\n\n"
      "_mooncake() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=\"\" opt=\"\" cmd=\"\" cmd_index=0 i\n"
      "  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
      "  COMPREPLY=()\n"
      "  # bash splits --opt=value at '=' (COMP_WORDBREAKS): --opt, =, value.\n"
      "  if [[ $cur == = && $prev == -* ]]; then\n"
      "    opt=$prev cur=\"\"\n"
      "  elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then\n"
      "    opt=${COMP_WORDS[COMP_CWORD - 2]}\n"
      "  elif [[ $prev == -* ]]; then\n"
      "    opt=$prev\n"
      "  fi\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]} cmd_index=$i; break ;; esac\n"
      "  done\n"
      "  case $cmd in\n"
      "    \"\")\n"
      "      COMPREPLY=($(compgen -W \"" + Join(top, " ") + "\" -- \"$cur\"))\n"
      "      ;;\n";
  for (const Command& c : cmds) out += BashCommand(c);
  out +=
      "  esac\n"
      "}\n\n"
      "complete -F _mooncake mooncake\n";
  return out;
}

// ---- zsh ----

// Text safe inside a single-quoted _arguments spec: no quotes or shell
// expansions, and brackets (which end an option's explanation) as parens.
// Colons are safe in an explanation and after a command name's first one.
std::string ZshText(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '\'': break;
      case '[': out += '('; break;
      case ']': out += ')'; break;
      case '\\': case '`': case '$': break;
      default: out += ch;
    }
  }
  return out;
}

std::string ZshAction(const Arg& a) {
  switch (a.kind) {
    case ValueKind::kNone: return "";
    case ValueKind::kFile: return "_files";
    case ValueKind::kChoice: return "(" + Join(a.choices, " ") + ")";
    case ValueKind::kFree: return " ";
  }
  return "";
}

std::string ZshOption(const Arg& a) {
  std::string out;
  const std::string help = "[" + ZshText(a.help) + "]";
  for (const auto& n : a.names) {
    if (!out.empty()) out += " ";
    if (a.kind == ValueKind::kNone) {
      out += "'" + n + help + "'";
    } else {
      // --opt= takes its value in the same word after '=' or in the next one.
      const std::string form = n.size() > 2 ? n + "=" : n;
      out += "'" + form + help + ":" + ZshText(a.names[0]) + ":" + ZshAction(a) + "'";
    }
  }
  return out;
}

std::string RenderZsh(const Command& root, const std::vector<Command>& cmds) {
  std::string out;
  out += "#compdef mooncake\n";
  out += "# zsh completion for mooncake(1), printed by `mooncake completion zsh`\n";
  out += "# (mooncake " MOONCAKE_VERSION ") from the binary's own option definitions:\n";
  out += "# regenerate it rather than edit it.\n\n";
  out += "_mooncake() {\n  local curcontext=$curcontext state line\n  local -a commands\n";
  out += "  commands=(\n";
  for (const Command& c : cmds) out += "    '" + c.name + ":" + ZshText(c.help) + "'\n";
  out += "  )\n  _arguments -C \\\n";
  for (const Arg& a : root.options) out += "    " + ZshOption(a) + " \\\n";
  out += "    '1: :->command' '*:: :->argument'\n";
  out += "  case $state in\n    command) _describe -t commands 'mooncake command' commands ;;\n";
  out += "    argument)\n      case $words[1] in\n";
  for (const Command& c : cmds) {
    out += "        " + c.name + ")\n          _arguments \\\n";
    for (const Arg& a : c.options) out += "            " + ZshOption(a) + " \\\n";
    for (size_t i = 0; i < c.positionals.size(); ++i) {
      const Arg& p = c.positionals[i];
      std::string pos = p.repeats ? "*" : std::to_string(i + 1);
      out += "            '" + pos + ":" + ZshText(p.names[0]) + ":" + ZshAction(p) + "' \\\n";
    }
    out += "            && return ;;\n";
  }
  out += "      esac ;;\n  esac\n}\n\n_mooncake \"$@\"\n";
  return out;
}

}  // namespace

RunFn SetupCompletion(CLI::App& sub) {
  auto shell = std::make_shared<std::string>();
  sub.add_option("shell", *shell, "Shell to print the script for")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  const CLI::App* root = sub.get_parent();
  return [shell, root] {
    const Command top = Walk(*root);
    std::vector<Command> cmds;
    for (const CLI::App* c : root->get_subcommands({})) cmds.push_back(Walk(*c));
    const std::string script = *shell == "bash" ? RenderBash(top, cmds) : RenderZsh(top, cmds);
    std::fputs(script.c_str(), stdout);
    return std::fflush(stdout) == 0 ? static_cast<int>(kExitOk) : static_cast<int>(kExitFailure);
  };
}

}  // namespace mc::cli
