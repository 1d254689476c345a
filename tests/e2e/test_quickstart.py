"""The README's by-hand lines on one host: `mooncake master --port P` and
`mooncake store --segment 1gb` give a working pool with no warning in either
log, then `put k -` / `get k` round-trip. No metadata server is configured,
so the store must say once, at INFO, that it did not publish its descriptor;
a metadata server configured explicitly but absent is still a WARN, and one
that is there (the master's embedded one) receives the descriptor."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

from harness import (check, finish, free_port, http, run, start, stop, tempdir,
                     wait_http, wait_until)

DEFAULT_METADATA_PORT = 8080   # the built-in [cluster] metadata_server


def port_busy(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return False
        except OSError:
            return True


# The default URL must be unanswered for the no-warning check, whatever else
# runs on this host: as root, rerun in a network namespace of our own (only
# its loopback, which the namespace takes away when the test ends).
if (os.environ.get("MC_QUICKSTART_NETNS") != "1" and os.geteuid() == 0
        and shutil.which("unshare") and shutil.which("ip")):
    env = dict(os.environ, MC_QUICKSTART_NETNS="1")
    sys.exit(subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
         sys.executable, *sys.argv], env=env).returncode)

if port_busy(DEFAULT_METADATA_PORT):
    # Something else on this host answers the default URL: the store would
    # talk to it, and "no warning" would test that stranger, not us.
    print(f"SKIP: port {DEFAULT_METADATA_PORT} is in use on this host; the no-warning "
          "check needs the default metadata URL unanswered")
    sys.exit(77)

logs = tempdir("mc-quickstart-")


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def warnings(text):
    return [l for l in text.splitlines() if re.search(r"\b(WARN|ERROR)\b", l)]


def start_pool(tag, master_args=(), store_args=()):
    """A master and one 1 GB store as the README's lines start them, on
    ports this test picks; returns (master, store, rpc, admin, logs)."""
    rpc, admin = free_port(), free_port()
    mlog, slog = f"{logs}/{tag}-master.log", f"{logs}/{tag}-store.log"
    master = start(["master", "--port", str(rpc), "--metrics-port", str(admin),
                    "--data-dir", f"{logs}/{tag}-state", *master_args], log_name=mlog)
    check(wait_http(f"http://127.0.0.1:{admin}/health"), f"{tag}: master serves /health")
    store = start(["store", "--segment", "1gb", "--master", f"127.0.0.1:{rpc}", *store_args],
                  log_name=slog)
    ready = wait_until(lambda: "store ready" in read(slog), 30)
    check(ready, f"{tag}: store logs 'store ready'")
    return master, store, rpc, admin, mlog, slog


# 1. Exactly the README lines (ports aside): nothing else configured.
master, store, rpc, admin, mlog, slog = start_pool("plain")
env = {"MOONCAKE_MASTER": f"127.0.0.1:{rpc}"}
r = run(["put", "k", "-"], input=b"hi\n", env=env)
check(r.returncode == 0, f"echo hi | mooncake put k - exits 0 ({r.stderr.decode().strip()})")
r = run(["get", "k"], env=env)
check(r.returncode == 0 and r.stdout == b"hi\n", f"mooncake get k prints hi ({r.stdout!r})")
stop(store)
stop(master)
m_text, s_text = read(mlog), read(slog)
check(not warnings(m_text), f"no WARN or ERROR in the master's log: {warnings(m_text)}")
check(not warnings(s_text), f"no WARN or ERROR in the store's log: {warnings(s_text)}")
check(s_text.count("no metadata server at http://127.0.0.1:8080/metadata") == 1,
      "the store says once that no metadata server is configured")

# 2. A metadata server configured explicitly but absent: that is a warning.
absent = free_port()
master, store, rpc, admin, mlog, slog = start_pool(
    "absent", store_args=["--metadata-server", f"http://127.0.0.1:{absent}/metadata"])
stop(store)
stop(master)
check(any("metadata server" in l for l in warnings(read(slog))),
      "an explicitly configured metadata server that is down is a WARN")

# 3. The master's embedded metadata server, named to the store: the
#    descriptor is published in the reference's shape, and no warning.
meta = free_port()
master, store, rpc, admin, mlog, slog = start_pool(
    "embedded",
    master_args=["--enable-http-metadata-server", "--http-metadata-server-port", str(meta)],
    store_args=["--metadata-server", f"http://127.0.0.1:{meta}/metadata"])
status, body = http("GET", f"http://127.0.0.1:{meta}/metadata?prefix=mooncake/ram/")
check(status == 200, f"the embedded metadata server lists descriptors ({status})")
status, body = http("GET", f"http://127.0.0.1:{admin}/get_all_segments")
segments = body.decode().split()
seg = segments[0] if segments else ""
status, body = http("GET", f"http://127.0.0.1:{meta}/metadata?key=mooncake/ram/{seg}")
desc = json.loads(body) if status == 200 else {}
check(desc.get("protocol") == "tcp" and desc.get("buffers"),
      f"the store published mooncake/ram/{seg} ({status} {body[:80]!r})")
stop(store)
stop(master)
check(not warnings(read(slog)) and not warnings(read(mlog)),
      "no WARN or ERROR with the embedded metadata server")
finish()
