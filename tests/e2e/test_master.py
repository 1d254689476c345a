"""The master over real RPC and its admin HTTP (issue 3, points 1, 5, 6, 7).

Several client processes against one master; the admin endpoints; metrics
that pass promtool; the periodic log line; liveness of a dead store.
"""
import concurrent.futures as cf
import json
import os
import re
import shutil
import signal
import socket
import subprocess

from cluster import Cluster
from harness import check, finish, free_port, http, run, wait_until

c = Cluster(stores=2, segment="64mb",
            extra_master=["--client-ttl", "2s", "--metrics-log-interval", "1s"])
try:
    env = c.env
    # Several client processes at once.
    def put(i):
        return run(["put", f"user/{i:03d}", "-"], input=os.urandom(1000 + i), env=env).returncode
    with cf.ThreadPoolExecutor(8) as ex:
        codes = list(ex.map(put, range(100)))
    check(codes == [0] * 100, "100 puts from 8 concurrent client processes succeed")

    status, body = c.admin("/health")
    check(status == 200, "GET /health is 200")

    # The master re-executes itself once (same pid) so glibc's malloc backs
    # its heap with transparent huge pages; an operator's own tunables win.
    with open(f"/proc/{c.master.pid}/environ", "rb") as f:
        environ = f.read().split(b"\0")
    # (glibc cuts the variable at the first ':' in place as it parses it, so
    # /proc shows only the first tunable of the list main.cc sets.)
    check(any(e.startswith(b"GLIBC_TUNABLES=glibc.malloc.hugetlb=1") for e in environ),
          "the master runs with huge-page heap tunables when GLIBC_TUNABLES is unset")

    status, body = c.admin("/metrics")
    text = body.decode()
    check(status == 200, "GET /metrics is 200")
    for name in ["master_allocated_bytes", "master_total_capacity_bytes", "master_key_count",
                 "master_soft_pin_key_count", "master_active_clients",
                 "master_successful_evictions_total", "master_evicted_key_count",
                 "master_evicted_size_bytes"]:
        check(re.search(rf"^{name}(\{{[^}}]*\}})? ", text, re.M) is not None, f"/metrics has {name}")
    m = re.search(r"^master_key_count (\d+)", text, re.M)
    check(m is not None and int(m.group(1)) == 100, "master_key_count is 100")
    m = re.search(r"^master_total_capacity_bytes (\d+)", text, re.M)
    check(m is not None and int(m.group(1)) == 2 * 64 * 1024 * 1024, "capacity is two 64 MiB segments")
    check(re.search(r"^master_put_start_requests_total ", text, re.M) is not None,
          "per-operation request counters are exported")
    promtool = shutil.which("promtool")
    if check(promtool is not None, "promtool is installed"):
        p = subprocess.run([promtool, "check", "metrics"], input=body,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        check(p.returncode == 0, "promtool check metrics passes: " + p.stdout.decode().strip()[:300])

    status, body = c.admin("/metrics/summary")
    check(status == 200 and b"Storage:" in body and b"Keys: 100" in body, "GET /metrics/summary")

    status, body = c.admin("/query_key?key=user/005")
    check(status == 200 and json.loads(body), "GET /query_key of a present key is 200 JSON")
    status, body = c.admin("/query_key?key=nope")
    check(status == 404 and b"-704" in body, "GET /query_key of a missing key is 404 naming -704")

    status, body = c.admin("/get_all_keys")
    keys = body.decode().split()
    check(status == 200 and len(keys) == 100 and "user/005" in keys, "GET /get_all_keys")
    segs = c.segments()
    check(len(segs) == 2, "GET /get_all_segments: one segment a line")

    ls = run(["ls", "user/"], env=env)
    check(ls.returncode == 0 and len(ls.stdout.split()) == 100, "ls pages through all 100 keys")
    lj = run(["ls", "user/00", "--json"], env=env)
    arr = json.loads(lj.stdout) if lj.returncode == 0 else []
    check(len(arr) == 10 and all("size" in o for o in arr), "ls --json under a prefix")

    r = run(["rm", "user/000", "user/001"], env=env)
    check(r.returncode == 0, "rm of two keys")
    r = run(["get", "user/000"], env=env)
    check(r.returncode == 3 and b"user/000" in r.stderr and b"OBJECT_NOT_FOUND" in r.stderr,
          "get of a removed key exits 3 naming the key and OBJECT_NOT_FOUND")
    r = run(["exists", "user/002"], env=env)
    check(r.returncode == 0, "exists of a present key exits 0")

    metrics_line = re.compile(
        r"Master Metrics: Storage: .* / .* \(.*%\) \| Keys: \d+ \(soft-pinned: \d+\)")
    check(wait_until(lambda: metrics_line.search(open(c.master_log).read()), 5) is not None,
          "the master logs the 'Master Metrics: Storage: ...' line")

    # A store that dies is unmounted after the client TTL; no allocation lands there.
    os.kill(c.stores[1].pid, signal.SIGKILL)
    c.stores[1].wait()
    check(wait_until(lambda: len(c.segments()) == 1, 8), "a killed store's segment is unmounted within the client TTL")
    codes = [run(["put", f"after/{i}", "-"], input=b"y" * 4096, env=env).returncode for i in range(20)]
    check(codes == [0] * 20, "puts after a store died all land on the live store")

    # Unknown master: the client reports it clearly with the unavailable exit code.
    bad = dict(env, MOONCAKE_MASTER="127.0.0.1:1")
    r = run(["get", "x", "--rpc-retries", "1"], env=bad, timeout=30)
    check(r.returncode == 4 and b"unavailable" in r.stderr, "an unreachable master: exit 4, 'unavailable'")

    # A master whose RPC port is taken stops at once, naming the port.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        rpc_port = taken.getsockname()[1]
        r = run(["master", "--port", str(rpc_port), "--metrics-port", str(free_port()),
                 "--rpc-address", "127.0.0.1", "--data-dir", "none"], timeout=30)
        check(r.returncode == 1 and f"127.0.0.1:{rpc_port}".encode() in r.stderr,
              f"a taken RPC port: exit 1 naming it ({r.returncode}: {r.stderr.decode().strip()[-200:]})")
finally:
    c.stop()
finish()
