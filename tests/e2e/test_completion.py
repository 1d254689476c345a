"""Shell completion: `mooncake completion bash` drives bash's completion the
way a user's TAB does, offers exactly what --help lists, and the zsh script
parses. Needs bash (and zsh for its check; scripts/setup.sh installs it)."""
import os
import re
import shutil
import subprocess

from harness import BIN, check, finish, run, tempdir

script_bash = run(["completion", "bash"]).stdout.decode()
check("complete -F _mooncake mooncake" in script_bash, "completion bash registers _mooncake")
check(run(["completion", "fish"]).returncode == 2, "completion of an unknown shell is a usage error")

work = tempdir("mooncake-completion-")
with open(os.path.join(work, "completion.bash"), "w") as f:
    f.write(script_bash)
for name in ("alpha.bin", "alpine.toml"):
    open(os.path.join(work, name), "w").close()
os.mkdir(os.path.join(work, "albums"))


def complete(line, with_bash_completion=False):
    """What TAB offers after `line` (a trailing space completes a new word),
    computed by bash from COMP_WORDS as readline would set them, '=' split
    into its own word as COMP_WORDBREAKS does."""
    words = re.findall(r"=|[^\s=]+", line)
    if line.endswith((" ", "=")):
        words.append("")
    prelude = ""
    if with_bash_completion:
        prelude = "source /usr/share/bash-completion/bash_completion\n"
    program = (prelude + "source completion.bash\n"
               "COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
               "COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}\n"
               "_mooncake; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", program, "bash"] + words,
                       cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    if p.returncode != 0 or p.stderr:
        print(f"  bash said ({p.returncode}): {p.stderr.decode()[:500]}")
    return sorted(w for w in p.stdout.decode().split("\n") if w)


def help_commands():
    text = run(["--help"]).stdout.decode()
    section = re.split(r"^subcommands:$", text, flags=re.M | re.I)[-1]
    section = section.split("\n\n")[0]
    return sorted(re.findall(r"^  ([a-z][a-z-]*)\s", section, re.M))


def help_options(cmd):
    text = run([cmd, "--help"]).stdout.decode()
    return set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", text, re.M))


commands = help_commands()
check(len(commands) >= 11 and "completion" in commands,
      f"--help lists the commands, completion among them ({len(commands)})")
offered = complete("mooncake ")
check(set(commands) <= set(offered), f"TAB after mooncake offers every command of --help "
      f"{sorted(set(commands) - set(offered))}")
check(complete("mooncake ma") == ["master"], "mooncake ma<TAB> completes master")
check(complete("mooncake me") == ["metadata-server"], "mooncake me<TAB> completes metadata-server")
check(complete("mooncake --ver") == ["--version"], "mooncake --ver<TAB> completes --version")

for cmd in commands:
    flags = help_options(cmd)
    got = set(complete(f"mooncake {cmd} -"))
    missing = sorted(flags - got)
    check(flags and not missing, f"mooncake {cmd} -<TAB> offers all {len(flags)} options of "
          f"--help {missing}")

check(complete("mooncake master --log-l") == ["--log-level"], "an option name completes")
levels = ["debug", "error", "info", "warn"]
check(complete("mooncake master --log-level ") == levels, "--log-level offers its choices")
check(complete("mooncake store --log-level=") == levels, "--log-level= offers its choices")
check(complete("mooncake store --log-level=w") == ["warn"], "--log-level=w completes warn")
check(complete("mooncake store --protocol r") == ["rdma"], "--protocol r completes rdma")
check(complete("mooncake bench --distribution ") == ["uniform", "zipf"],
      "bench --distribution offers the choices of its own check")
check(complete("mooncake master --config alpi") == ["alpine.toml"], "--config completes file names")
check(complete("mooncake get key -o al") == ["albums", "alpha.bin", "alpine.toml"],
      "get -o completes file names")
check(complete("mooncake master --rpc-port ") == [], "a free value (a port) offers nothing")
check(complete("mooncake put ") == [], "put's KEY offers nothing (keys are not guessed)")
check(complete("mooncake put some/key alpha") == ["alpha.bin"], "put's FILE completes file names")
check(complete("mooncake put --master 127.0.0.1:1 --soft-pin k alpi") == ["alpine.toml"],
      "put's FILE is found after options and their values")
check(complete("mooncake put --master=h:1 k alpi") == ["alpine.toml"],
      "put's FILE is found after an --option=value")
check(complete("mooncake completion ") == ["bash", "zsh"], "completion offers bash and zsh")
check(complete("mooncake store --no-h") == ["--no-hugepages"], "negations are offered")
check("--rpc_port" not in complete("mooncake master --rpc"),
      "reference-style aliases (--rpc_port) are not offered")
check(complete("mooncake master --log-level ", with_bash_completion=True) == levels,
      "works beside bash-completion's own functions")

zsh = shutil.which("zsh")
if check(zsh is not None, "zsh is installed (scripts/setup.sh installs it)"):
    script_zsh = run(["completion", "zsh"]).stdout.decode()
    path = os.path.join(work, "_mooncake")
    with open(path, "w") as f:
        f.write(script_zsh)
    p = subprocess.run([zsh, "-n", path], stderr=subprocess.PIPE)
    check(p.returncode == 0 and not p.stderr, f"zsh -n accepts the zsh script {p.stderr[:300]}")
    check(script_zsh.startswith("#compdef mooncake"), "the zsh script is a #compdef function")
    missing = [c for c in commands if f"'{c}:" not in script_zsh]
    check(not missing, f"the zsh script describes every command {missing}")
finish()
