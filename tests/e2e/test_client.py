"""`mooncake client` (mooncake-client(1)) as a process: the reference's
mooncake_client flags and ours, its segment, the dummies' socket, exits.
The dummy clients themselves are tested from Python
(tests/python/test_dummy_client.py)."""
import os
import socket
import urllib.request

from cluster import Cluster
from harness import check, finish, free_port, run, start, stop, tempdir, wait_until

cluster = Cluster(stores=0)
logdir = tempdir("mooncake-client-e2e-")


def launch(args, name):
    log = os.path.join(logdir, name + ".log")
    p = start(["client"] + args, env=cluster.env, log_name=log)
    ready = wait_until(lambda: p.poll() is not None or "client ready" in open(log).read(), 20)
    return p, log, bool(ready) and p.poll() is None


def answers(path):
    """Something listens on the Unix socket `path` ('@': abstract)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + path[1:] if path.startswith("@") else path)
        return True
    except OSError:
        return False
    finally:
        s.close()


helptext = run(["client", "--help"]).stdout.decode()
for flag in ["--port", "--global-segment-size", "--socket", "--max-pool-size", "--max-dummies",
             "--threads", "--http-port", "--host", "--master_server_address", "--device_names",
             "--metadata_server", "--local_buffer_size", "--protocol"]:
    check(flag in helptext, f"mooncake client --help lists {flag}")
check("PORT=50052" in helptext, "--port defaults to the reference's 50052")

# The reference's spellings, all of them, as mooncake_client takes them.
port = free_port()
before = len(cluster.segments())
p, log, ready = launch(["--host", "127.0.0.1", "--port", str(port),
                        "--metadata_server", f"http://127.0.0.1:{cluster.meta_port}/metadata",
                        "--master_server_address", f"127.0.0.1:{cluster.rpc_port}",
                        "--protocol", "tcp", "--device_names", "",
                        "--global_segment_size", "32mb", "--local_buffer_size", "16mb",
                        "--threads", "2"], "reference-flags")
check(ready, "mooncake client starts with the reference's flag names")
check(f"dummies on @mooncake_client_{port}.sock" in open(log).read(),
      "the dummies' socket is named after --port")
check(answers(f"@mooncake_client_{port}.sock"), "the abstract socket accepts connections")
check(len(cluster.segments()) == before + 1, "its segment is mounted on the master")
check(stop(p) == 0, "SIGTERM stops it with status 0")
check(wait_until(lambda: len(cluster.segments()) == before, 10),
      "its segment is unmounted when it stops")
check(not answers(f"@mooncake_client_{port}.sock"), "the socket is gone after the stop")

# Ours: a socket file, no segment.
path = os.path.join(logdir, "client.sock")
p, log, ready = launch(["--master", f"127.0.0.1:{cluster.rpc_port}", "--socket", path,
                        "--global-segment-size", "0", "--max-dummies", "2"], "socket-file")
check(ready and os.path.exists(path) and answers(path), "--socket PATH listens on that file")
check("no segment" in open(log).read(), "--global-segment-size 0 contributes no memory")
check(len(cluster.segments()) == before, "and mounts nothing")
check(stop(p) == 0 and not os.path.exists(path), "the socket file is removed at the stop")

# The HTTP API on --http-port, over the client's own connections.
hport = free_port()
p, log, ready = launch(["--master", f"127.0.0.1:{cluster.rpc_port}", "--port", str(free_port()),
                        "--metadata-server", f"http://127.0.0.1:{cluster.meta_port}/metadata",
                        "--global-segment-size", "32mb", "--http-port", str(hport)], "http")
check(ready and f"HTTP API on port {hport}" in open(log).read(), "--http-port serves the HTTP API")


def http(method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{hport}{path}", data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


value = bytes(range(256)) * 64
r = http("PUT", "/api/put/http-key", value)
check(r[0] == 200, f"PUT /api/put/{{key}} stores the body ({r[0]} {r[1][:200]!r})")
check(http("GET", "/api/get/http-key") == (200, value), "GET /api/get/{key} returns it byte for byte")
check(b"true" in http("GET", "/api/exist/http-key")[1], "GET /api/exist/{key} sees it")
check(http("GET", "/health")[0] == 200, "/health answers 200 while the segment serves")
check(http("GET", "/api/get/no-such-key")[0] == 404, "an absent key is 404")
check(stop(p) == 0, "the client with an HTTP port stops with status 0")
p, log, ready = launch(["--master", f"127.0.0.1:{cluster.rpc_port}", "--port", str(free_port()),
                        "--global-segment-size", "0", "--http-port", str(cluster.rpc_port)],
                       "http-busy")
check(not ready and p.wait(10) == 1 and "HTTP API on port" in open(log).read(),
      "an --http-port already taken stops the client with status 1, naming it")

# Mistakes are exit 2 with the flag named.
r = run(["client", "--max-pool-size", "lots"])
check(r.returncode == 2 and b"--max-pool-size" in r.stderr,
      f"a bad --max-pool-size is exit 2 naming it ({r.stderr.decode().strip()[:120]})")
r = run(["client", "--max-dummies", "0"])
check(r.returncode == 2, "--max-dummies 0 is refused (exit 2)")
r = run(["client", "--print-config", "--global-segment-size", "2gb"])
check(r.returncode == 0 and b"[store]" in r.stdout and b"[cluster]" in r.stdout,
      "--print-config prints the store and cluster settings")
cluster.stop()
finish()
