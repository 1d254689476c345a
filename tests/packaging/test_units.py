"""The systemd units: `systemd-analyze verify` passes on each, in a root laid
out as the package installs it (the binary, the man pages their
Documentation= names, the host's own units for the targets they order
against), and `systemd-analyze security` rates each at most MAX_EXPOSURE.
Also checks what issue 23 asks of every unit. Needs systemd-analyze
(package systemd; scripts/setup.sh installs it)."""
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from harness import BIN, SRC, check, finish, tempdir  # noqa: E402

# systemd's scale: 0 (locked down) .. 10 (exposed); "OK" is below 2.
MAX_EXPOSURE = 2.0
UNITS = ["mooncake-master.service", "mooncake-store.service", "mooncake-store@.service",
         "mooncake-metadata-server.service", "mooncake-client.service"]

analyze = shutil.which("systemd-analyze")
if not check(analyze is not None, "systemd-analyze is installed"):
    finish()

root = tempdir("mooncake-units-")
unit_dir = os.path.join(root, "lib/systemd/system")
shutil.copytree("/lib/systemd/system", unit_dir, symlinks=True)
os.makedirs(os.path.join(root, "usr/bin"))
shutil.copy(BIN, os.path.join(root, "usr/bin/mooncake"))
# ExecReload= runs /bin/kill (procps, a dependency of the package).
os.makedirs(os.path.join(root, "bin"))
shutil.copy(shutil.which("kill") or "/bin/kill", os.path.join(root, "bin/kill"))
for page in glob.glob(os.path.join(SRC, "man", "*.[157]")):
    section_dir = os.path.join(root, "usr/share/man", "man" + page[-1])
    os.makedirs(section_dir, exist_ok=True)
    shutil.copy(page, section_dir)
for unit in UNITS:
    shutil.copy(os.path.join(SRC, "packaging", "systemd", unit), unit_dir)
# Documentation=man:... is checked with man(1), which looks in MANPATH.
env = dict(os.environ, MANPATH=os.path.join(root, "usr/share/man"), SYSTEMD_LOG_COLOR="0")

scores = {}
for unit in UNITS:
    path = "/lib/systemd/system/" + unit
    r = subprocess.run([analyze, "verify", f"--root={root}", path], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    check(r.returncode == 0 and not r.stdout.strip(),
          f"systemd-analyze verify {unit} passes silently {r.stdout.decode()[:600]}")
    r = subprocess.run([analyze, "security", "--offline=true", f"--root={root}", path], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout.decode())
    score = float(m.group(1)) if m else 99.0
    scores[unit] = score
    check(score <= MAX_EXPOSURE, f"systemd-analyze security {unit}: exposure {score} "
          f"(at most {MAX_EXPOSURE})")

for unit in UNITS:
    text = open(os.path.join(SRC, "packaging", "systemd", unit)).read()
    settings = dict(re.findall(r"^(\w+)=(.*)$", text, re.M))
    lines = set(re.findall(r"^(\w+=.*)$", text, re.M))
    check(settings.get("Type") == "notify" and settings.get("NotifyAccess") == "main",
          f"{unit}: Type=notify, readiness from the main process")
    check(settings.get("User") == "mooncake" and settings.get("Restart") == "on-failure",
          f"{unit}: runs as mooncake, Restart=on-failure")
    for want in ("ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                 "CapabilityBoundingSet=", "MemoryDenyWriteExecute=yes", "ProtectHome=yes",
                 "SystemCallFilter=@system-service"):
        check(want in lines, f"{unit}: {want}")
    if "store" in unit or "client" in unit:
        check(settings.get("LimitMEMLOCK") == "infinity", f"{unit}: LimitMEMLOCK=infinity (RDMA)")
        check("nr_hugepages" in text, f"{unit}: documents reserving huge pages")
    if "master" in unit:
        check(settings.get("StateDirectory") == "mooncake", f"{unit}: StateDirectory=mooncake")
print("exposure: " + ", ".join(f"{u} {s}" for u, s in scores.items()))
finish()
