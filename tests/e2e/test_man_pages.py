"""Man pages render without warnings and document every option --help shows."""
import glob
import os
import re
import subprocess

from harness import SRC, check, finish, run

pages = sorted(glob.glob(os.path.join(SRC, "man", "*.[1357]")))
check(len(pages) >= 10, f"{len(pages)} man pages present")
for page in pages:
    p = subprocess.run(["groff", "-man", "-ww", "-z", page], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    check(p.returncode == 0 and not p.stdout, f"groff -man -ww -z {os.path.basename(page)} prints nothing")

for cmd in ["master", "store", "client", "metadata-server", "put", "get", "ls", "rm", "exists", "bench"]:
    path = os.path.join(SRC, "man", f"mooncake-{cmd}.1")
    if not check(os.path.exists(path), f"man page for mooncake {cmd}"):
        continue
    text = open(path).read().replace("\\-", "-").replace("\\e", "\\")
    helptext = run([cmd, "--help"]).stdout.decode()
    flags = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", helptext, re.M))
    missing = sorted(f for f in flags - {"--help"} if f not in text)
    check(not missing, f"mooncake-{cmd}.1 documents all {len(flags)} options of --help {missing}")
    defaults = re.findall(r"^\s+(--[a-z][a-z0-9-]*) \S+=(\S+)", helptext, re.M)
    wrong = [f"{f}={d}" for f, d in defaults if f"{f}" in text and d not in text]
    check(not wrong, f"mooncake-{cmd}.1 shows the defaults --help shows {wrong[:5]}")
finish()
