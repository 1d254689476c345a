"""Settings above the ceiling a later layer relies on (common/ceilings.h) are
refused at start-up, exit 2, with one line naming the setting, the value and
the ceiling; a value at the ceiling is accepted. Nothing is clamped."""
import os
import subprocess
import tempfile

from harness import check, finish, free_port, run

tmp = tempfile.TemporaryDirectory(prefix="mc_e2e_ceilings_")


def refused(args, setting, value, ceiling, what):
    """The command exits 2 at once with one line naming setting, value, ceiling."""
    try:
        r = run(args, timeout=20)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: exits 2 at start-up (it kept running)")
        return
    err = r.stderr.decode().strip()
    needle = f"{setting} = {value} is above its ceiling {ceiling}"
    ok = r.returncode == 2 and len(err.splitlines()) == 1 and needle in err
    check(ok, f"{what}: exit 2, '{needle}'" + ("" if ok else f" (got {r.returncode}: {err!r})"))


ports = ["--port", str(free_port()), "--metrics-port", str(free_port())]
refused(["master", "--max-batch", "65537", *ports], "[master] max_batch", 65537, 65536,
        "master --max-batch above the wire's batch ceiling")
toml_path = os.path.join(tmp.name, "mooncake.toml")
with open(toml_path, "w") as f:
    f.write("[master]\nmax_batch = 100000\n")
refused(["master", "--config", toml_path, *ports], "[master] max_batch", 100000, 65536,
        "max_batch above the ceiling in a TOML file")
refused(["put", "k", "-", "--master", "127.0.0.1:1", "--tcp-streams", "65"],
        "[client] tcp_streams", 65, 64, "put --tcp-streams above the ceiling (not clamped to 64)")
refused(["store", "--tcp-streams", "1000", "--master", "127.0.0.1:1"],
        "[client] tcp_streams", 1000, 64, "store --tcp-streams above the ceiling")

r = run(["master", "--print-config", "--max-batch", "65536"])
check(r.returncode == 0 and b"max_batch = 65536" in r.stdout, "max_batch at its ceiling is accepted")
r = run(["store", "--print-config", "--tcp-streams", "64"])
check(r.returncode == 0 and b"tcp_streams = 64" in r.stdout, "tcp_streams at its ceiling is accepted")
finish()
