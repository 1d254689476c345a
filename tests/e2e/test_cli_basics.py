"""The mooncake binary: subcommands, --help, usage errors and static linking."""
import subprocess

from harness import BIN, check, finish, run

SUBCOMMANDS = ["master", "store", "metadata-server", "put", "get", "ls", "rm",
               "exists", "bench", "version"]

r = run(["--help"])
out = r.stdout.decode()
check(r.returncode == 0, "mooncake --help exits 0")
for name in SUBCOMMANDS:
    check(name in out, f"mooncake --help lists '{name}'")
for name in SUBCOMMANDS:
    h = run([name, "--help"])
    check(h.returncode == 0 and b"--help" in h.stdout, f"mooncake {name} --help exits 0 and lists options")

r = run(["frobnicate"])
err = r.stderr.decode().strip()
check(r.returncode == 2, "unknown subcommand exits 2")
check(len(err.splitlines()) == 1 and "frobnicate" in err, "unknown subcommand: one line naming it")

r = run(["version", "--no-such-flag"])
err = r.stderr.decode().strip()
check(r.returncode == 2, "unknown flag exits 2")
check(len(err.splitlines()) == 1 and "--no-such-flag" in err, "unknown flag: one line naming it")

r = run([])
check(r.returncode == 2, "no subcommand exits 2")

r = run(["version"])
check(r.returncode == 0 and r.stdout.startswith(b"mooncake "), "version prints the version")

f = subprocess.run(["file", "-L", BIN], stdout=subprocess.PIPE).stdout.decode()
import os
if os.environ.get("MOONCAKE_EXPECT_STATIC", "1") == "1":
    check("statically linked" in f, "the binary is statically linked: " + f.strip())
finish()
