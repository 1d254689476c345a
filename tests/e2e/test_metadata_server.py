"""`mooncake metadata-server`: the reference HTTP API over real HTTP, limits,
1,000 concurrent mixed requests, and durability across kill -9 under load."""
import os
import random
import re
import signal
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from harness import check, finish, free_port, http, run, start, stop, wait_http, wait_until

seed = int(os.environ.get("MC_SEED") or random.randrange(1 << 30))
print(f"MC_SEED={seed}")
rng = random.Random(seed)
tmp = tempfile.TemporaryDirectory(prefix="mc_meta_e2e_")


def url(port, key=None, prefix=None, path="/metadata"):
    q = {}
    if key is not None:
        q["key"] = key
    if prefix is not None:
        q["prefix"] = prefix
    return f"http://127.0.0.1:{port}{path}" + ("?" + urllib.parse.urlencode(q) if q else "")


def start_server(port, db=None, log=None):
    args = ["metadata-server", "--host", "127.0.0.1", "--port", str(port)]
    if db:
        args += ["--db", db]
    p = start(args, log_name=log)
    ok = wait_http(url(port, path="/health"))
    return p, ok


# --- the API, case by case ---------------------------------------------------
port = free_port()
log = os.path.join(tmp.name, "api.log")
p, ok = start_server(port, db=os.path.join(tmp.name, "api.db"), log=log)
check(ok, "metadata-server answers /health after start")
check(wait_until(lambda: f"metadata server listening on 127.0.0.1:{port}" in open(log).read(), 5),
      "start logs 'metadata server listening on HOST:PORT' with the real port")

check(http("GET", url(port, path="/health"))[0] == 200, "GET /health -> 200")
check(http("GET", url(port, "mooncake/ram/a")) [0] == 404, "GET of an absent key -> 404")
check(http("PUT", url(port, "mooncake/ram/a"), b'{"name":"a"}')[0] == 200, "PUT -> 200")
check(http("GET", url(port, "mooncake/ram/a")) == (200, b'{"name":"a"}'), "GET returns the stored bytes")
check(http("PUT", url(port, "mooncake/ram/a"), b'{"name":"b"}')[0] == 200, "PUT overwrites a plain key -> 200")
check(http("GET", url(port, "mooncake/ram/a"))[1] == b'{"name":"b"}', "GET returns the overwritten bytes")
binary = bytes(range(256))
check(http("PUT", url(port, "bin key/\u00e9&=?"), binary)[0] == 200, "PUT of binary bytes under an escaped key -> 200")
check(http("GET", url(port, "bin key/\u00e9&=?")) == (200, binary), "binary bytes read back unchanged")
check(http("PUT", url(port, "empty"), b"")[0] == 200, "PUT of an empty value -> 200")
check(http("GET", url(port, "empty")) == (200, b""), "an empty value reads back empty")
check(http("DELETE", url(port, "mooncake/ram/a"))[0] == 200, "DELETE of a present key -> 200")
check(http("DELETE", url(port, "mooncake/ram/a"))[0] == 404, "DELETE of an absent key -> 404")
check(http("GET", url(port, "mooncake/ram/a"))[0] == 404, "a deleted key is gone")
for m in ("GET", "PUT", "DELETE"):
    check(http(m, url(port), b"x" if m == "PUT" else None)[0] == 400, f"{m} without key -> 400")
for m in ("POST", "PATCH", "OPTIONS", "HEAD"):
    check(http(m, url(port, "k"), b"x" if m in ("POST", "PATCH") else None)[0] == 405,
          f"{m} on /metadata -> 405")
rk = "mooncake/rpc_meta/host1"
check(http("PUT", url(port, rk), b'{"rpc_port":1}')[0] == 200, "first PUT of an rpc_meta key -> 200")
check(http("PUT", url(port, rk), b'{"rpc_port":1}')[0] == 200, "same-bytes PUT of an rpc_meta key -> 200")
st, body = http("PUT", url(port, rk), b'{"rpc_port":2}')
check(st == 400 and b"rpc_meta" in body, "changing PUT of an rpc_meta key -> 400 saying why")
check(http("GET", url(port, rk))[1] == b'{"rpc_port":1}', "the rpc_meta key keeps its first value")
check(http("GET", url(port, path="/nowhere"))[0] == 404, "unknown path -> 404")
for k in ("mooncake/ram/s1", "mooncake/ram/s2", "mooncake/ramx"):
    http("PUT", url(port, k), b"v")
check(http("GET", url(port, prefix="mooncake/ram/")) == (200, b"mooncake/ram/s1\nmooncake/ram/s2\n"),
      "GET ?prefix= lists the keys under it, one per line")
check(http("GET", url(port, prefix="none/")) == (200, b""), "an empty listing -> 200 and empty body")
st, body = http("PUT", url(port, "k" * 4097), b"v")
check(st == 413 and b"max_key_size = 4096 bytes" in body, "a key past 4096 bytes -> 413 naming the limit")
check(http("PUT", url(port, "k" * 4096), b"v")[0] == 200, "a key of exactly 4096 bytes -> 200")
big = 4 << 20
st, body = http("PUT", url(port, "big"), b"v" * (big + 1), timeout=60)
check(st == 413 and f"max_value_size = {big} bytes".encode() in body, "a value past 4 MiB -> 413 naming the limit")
check(http("PUT", url(port, "big"), b"v" * big, timeout=60)[0] == 200, "a value of exactly 4 MiB -> 200")

r = run(["metadata-server", "--host", "127.0.0.1", "--port", str(port)], timeout=30)
err = r.stderr.decode()
check(r.returncode != 0 and str(port) in err and "in use" in err,
      f"a second server on a busy port exits non-zero naming it: {err.strip()}")
r = run(["metadata-server", "--port", str(free_port()), "--db", os.path.join(tmp.name, "api.db")], timeout=30)
check(r.returncode != 0 and "in use by another process" in r.stderr.decode(),
      "a second server on the same --db file is refused")
check(stop(p, signal.SIGINT) == 0, "SIGINT stops the server with exit 0")
p, ok = start_server(port, db=os.path.join(tmp.name, "api.db"))
check(ok and http("GET", url(port, rk)) == (200, b'{"rpc_port":1}'),
      "after a clean restart with --db the keys are still there")
check(stop(p, signal.SIGTERM) == 0, "SIGTERM stops the server with exit 0")

# --- 1,000 concurrent mixed requests ------------------------------------------
port = free_port()
p, ok = start_server(port)
check(ok, "memory-only server started for the concurrency test")
WORKERS, PER_WORKER = 32, 32   # 1,024 requests
errors = []
models = [dict() for _ in range(WORKERS)]
shared_values = [f"v{i}".encode() for i in range(WORKERS)]


def worker(w, wrng):
    model = models[w]
    for i in range(PER_WORKER):
        op = wrng.random()
        key = f"load/w{w}/k{wrng.randrange(8)}"
        try:
            if op < 0.4:
                val = f"{w}-{i}".encode()
                st, _ = http("PUT", url(port, key), val)
                if st != 200:
                    errors.append(("PUT", key, st))
                model[key] = val
            elif op < 0.6:
                st, _ = http("DELETE", url(port, key))
                if st != (200 if key in model else 404):
                    errors.append(("DELETE", key, st))
                model.pop(key, None)
            elif op < 0.8:
                st, body = http("GET", url(port, key))
                want = (200, model[key]) if key in model else (404, None)
                if st != want[0] or (st == 200 and body != want[1]):
                    errors.append(("GET", key, st))
            elif op < 0.9:
                st, body = http("GET", url(port, prefix=f"load/w{w}/"))
                if st != 200 or body.decode().split("\n")[:-1] != sorted(model):
                    errors.append(("LIST", w, st))
            else:
                st, _ = http("PUT", url(port, "load/shared"), shared_values[w])
                if st != 200:
                    errors.append(("PUT shared", st))
        except Exception as e:  # noqa: BLE001 - any failure is a test failure
            errors.append(("exception", key, repr(e)))


t0 = time.monotonic()
with ThreadPoolExecutor(WORKERS) as ex:
    list(ex.map(lambda w: worker(w, random.Random(seed + w)), range(WORKERS)))
elapsed = time.monotonic() - t0
check(not errors, f"{WORKERS * PER_WORKER} concurrent mixed requests in {elapsed:.1f}s, no error {errors[:5]}")
expected = {k: v for m in models for k, v in m.items()}
st, body = http("GET", url(port, prefix="load/w"))
check(st == 200 and body.decode().split("\n")[:-1] == sorted(expected), "final listing matches the model")
check(all(http("GET", url(port, k)) == (200, v) for k, v in expected.items()),
      "every final value matches the model")
st, body = http("GET", url(port, "load/shared"))
check(st == 200 and body in shared_values, "the contended key holds one of the written values")
stop(p)

# --- kill -9 under load keeps every acknowledged write ------------------------
port = free_port()
db = os.path.join(tmp.name, "crash.db")
p, ok = start_server(port, db=db)
check(ok, "server with --db started for the crash test")
acked = {}       # key -> bytes, or None if acknowledged deleted
in_flight = {}   # key -> (old state, new state) for requests not answered
lock = threading.Lock()
stop_load = threading.Event()
acked_ops = [0]


def crash_worker(w):
    wrng = random.Random(seed * 31 + w)
    i = 0
    while not stop_load.is_set():
        key = f"crash/w{w}/k{wrng.randrange(16)}"
        with lock:
            old = acked.get(key)
        if old is not None and wrng.random() < 0.3:
            method, new, body = "DELETE", None, None
        else:
            new = f"{w}-{i}".encode()
            method, body = "PUT", new
        with lock:
            in_flight[key] = (old, new)
        try:
            st, _ = http(method, url(port, key), body, timeout=5)
        except Exception:  # noqa: BLE001 - the server was killed mid-request
            return
        with lock:
            if st == 200:
                acked[key] = new
                acked_ops[0] += 1
                del in_flight[key]
            else:
                return
        i += 1


threads = [threading.Thread(target=crash_worker, args=(w,)) for w in range(16)]
for t in threads:
    t.start()
time.sleep(1.5)
os.kill(p.pid, signal.SIGKILL)
p.wait()
stop_load.set()
for t in threads:
    t.join()
check(acked_ops[0] > 50, f"{acked_ops[0]} writes acknowledged before kill -9")
p, ok = start_server(port, db=db)
check(ok, "server restarts on the same --db after kill -9")
bad = []
for key in set(acked) | set(in_flight):
    st, body = http("GET", url(port, key))
    got = body if st == 200 else None
    allowed = set(in_flight[key]) if key in in_flight else {acked.get(key)}
    if got not in allowed:
        bad.append((key, got, allowed))
check(not bad, f"every acknowledged PUT and DELETE survived kill -9 ({len(acked)} keys, "
      f"{len(in_flight)} in flight) {bad[:3]}")
stop(p)
finish()
