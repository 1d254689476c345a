#!/usr/bin/env python3
"""Issue 19, point 9: mooncake.store from Python beside `mooncake bench` and
redis-py, on the same cluster and path (run by scripts/bench_python.sh).

Workloads: zero-copy put_from / get_into of 4 MiB objects (GB/s), and
batch_put_from / batch_get_into of 32 keys of 4 KiB (keys/s). Each is run
`reps` times per path (same-host, TCP); the table shows medians. Puts write
fresh keys (the pool fills and evicts, as in `mooncake bench`); gets read
keys written just before that are still in the pool. redis-py does the same
workload against a local Redis (SET/GET, and a pipeline of 32 SETs / MGET).
Printed figures, not a timed test.
"""
import argparse
import ctypes
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time

from mooncake.store import MooncakeDistributedStore

BIG, SMALL, BATCH = 4 << 20, 4 << 10, 32


def timed(duration, step):
    """Runs step() for `duration` seconds; returns (units moved, seconds)."""
    done, t0 = 0, time.perf_counter()
    while True:
        done += step()
        t = time.perf_counter() - t0
        if t >= duration:
            return done, t


def python_big(store, duration, tag):
    src = (ctypes.c_ubyte * BIG)()
    dst = (ctypes.c_ubyte * BIG)()
    sp, dp = ctypes.addressof(src), ctypes.addressof(dst)
    ctypes.memset(sp, 0x5a, BIG)
    store.register_buffer(sp, BIG)
    store.register_buffer(dp, BIG)
    keys = []

    def put():
        k = f"{tag}-{len(keys)}"
        if store.put_from(k, sp, BIG) != 0:
            return 0
        keys.append(k)
        return BIG

    put_bytes, put_s = timed(duration, put)
    recent = keys[-100:]

    def get():
        n = store.get_into(random.choice(recent), dp, BIG)
        return n if n > 0 else 0

    get_bytes, get_s = timed(duration, get)
    store.unregister_buffer(sp)
    store.unregister_buffer(dp)
    return put_bytes / put_s / 1e9, get_bytes / get_s / 1e9


def python_batch(store, duration, tag):
    buf = (ctypes.c_ubyte * (SMALL * BATCH))()
    base = ctypes.addressof(buf)
    ctypes.memset(base, 0x33, SMALL * BATCH)
    store.register_buffer(base, SMALL * BATCH)
    ptrs, sizes = [base + i * SMALL for i in range(BATCH)], [SMALL] * BATCH
    written = []

    def put():
        n = len(written)
        ks = [f"{tag}-{n + i}" for i in range(BATCH)]
        ok = sum(1 for r in store.batch_put_from(ks, ptrs, sizes) if r == 0)
        written.extend(ks)
        return ok

    put_keys, put_s = timed(duration, put)
    recent = written[-1000:]  # mooncake bench reads from --keys 1000

    def get():
        ks = random.sample(recent, BATCH)
        return sum(1 for r in store.batch_get_into(ks, ptrs, sizes) if r > 0)

    get_keys, get_s = timed(duration, get)
    store.unregister_buffer(base)
    return put_keys / put_s, get_keys / get_s


def mooncake_bench(args, shm, size, batch, tag):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [args.bin, "bench", "--op", "put,get", "--value-size", str(size),
               "--batch", str(batch), "--duration", f"{args.duration}s", "--json", f.name,
               "--master", args.master, "--log-level", "warn", f"--shm={str(shm).lower()}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        res = {r["op"]: r for r in json.load(open(f.name))["results"] if r["target"] == "mooncake"}
    if batch == 1:
        return res["put"]["bytes_per_s"] / 1e9, res["get"]["bytes_per_s"] / 1e9
    return res["put"]["ops_per_s"], res["get"]["ops_per_s"]


def redis_runs(port, duration):
    import redis
    r = redis.Redis(host="127.0.0.1", port=port)
    r.flushall()
    big = b"\x5a" * BIG
    n = [0]

    def put_big():
        r.set(f"rb-{n[0] % 100}", big)
        n[0] += 1
        return BIG

    def get_big():
        v = r.get(f"rb-{random.randrange(min(n[0], 100))}")
        return len(v) if v else 0

    small = b"\x33" * SMALL
    m = [0]

    def put_batch():
        p = r.pipeline(transaction=False)
        for i in range(BATCH):
            p.set(f"rs-{(m[0] + i) % 1000}", small)
        p.execute()
        m[0] += BATCH
        return BATCH

    def get_batch():
        ks = [f"rs-{random.randrange(min(m[0], 1000))}" for _ in range(BATCH)]
        return sum(1 for v in r.mget(ks) if v)

    pb, ps = timed(duration, put_big)
    gb, gs = timed(duration, get_big)
    pk, pks = timed(duration, put_batch)
    gk, gks = timed(duration, get_batch)
    r.flushall()
    return {"4mib": (pb / ps / 1e9, gb / gs / 1e9), "batch": (pk / pks, gk / gks)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--master", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--redis-port", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3.0)
    args = ap.parse_args()

    rows = []  # (path, workload, op, unit, bench list, python list, redis list)
    for path, shm in (("same-host", True), ("tcp", False)):
        figures = {k: ([], []) for k in ("4mib-put", "4mib-get", "batch-put", "batch-get")}
        for rep in range(args.reps):
            store = MooncakeDistributedStore()
            rc = store.setup({"local_hostname": "127.0.0.1", "metadata_server": args.meta,
                              "global_segment_size": "0", "local_buffer_size": "0",
                              "protocol": "tcp", "master_server_address": args.master,
                              "shm": "true" if shm else "false", "log_level": "warn"})
            assert rc == 0, rc
            tag = f"py-{path}-{rep}-{time.time_ns()}"
            # Alternate which side goes first, so load that drifts during a
            # run (other work on the machine) does not favour one side.
            first_bench = rep % 2 == 0
            for workload in ("4mib", "batch"):
                def run_bench():
                    return (mooncake_bench(args, shm, "4mb", 1, tag) if workload == "4mib"
                            else mooncake_bench(args, shm, "4kb", BATCH, tag))

                def run_python():
                    return (python_big(store, args.duration, f"{tag}-big") if workload == "4mib"
                            else python_batch(store, args.duration, f"{tag}-batch"))

                if first_bench:
                    b, p = run_bench(), run_python()
                else:
                    p, b = run_python(), run_bench()
                figures[workload + "-put"][0].append(b[0]); figures[workload + "-put"][1].append(p[0])
                figures[workload + "-get"][0].append(b[1]); figures[workload + "-get"][1].append(p[1])
            store.remove_all()
            store.close()
            print(f"  {path} run {rep + 1}/{args.reps}: " + ", ".join(
                f"{k} bench {v[0][-1]:.4g} python {v[1][-1]:.4g}" for k, v in figures.items()),
                flush=True)
        for k, (bl, pl) in figures.items():
            rows.append((path, k, bl, pl))

    redis = {"4mib-put": [], "4mib-get": [], "batch-put": [], "batch-get": []}
    if args.redis_port:
        for _ in range(args.reps):
            r = redis_runs(args.redis_port, args.duration)
            redis["4mib-put"].append(r["4mib"][0]); redis["4mib-get"].append(r["4mib"][1])
            redis["batch-put"].append(r["batch"][0]); redis["batch-get"].append(r["batch"][1])

    med = statistics.median
    print()
    print(f"medians of {args.reps} runs of {args.duration:g}s per operation; "
          "4 MiB rows in GB/s, batch rows (32 x 4 KiB per call) in keys/s")
    print(f"| path | workload | mooncake bench | python mooncake.store | python/bench | target | redis-py |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path, k, bl, pl in rows:
        target = 90 if k.startswith("4mib") else 80
        ratio = 100 * med(pl) / med(bl)
        rd = f"{med(redis[k]):.4g}" if redis[k] else "-"
        name = {"4mib-put": "put_from 4 MiB", "4mib-get": "get_into 4 MiB",
                "batch-put": "batch_put_from 32x4KiB", "batch-get": "batch_get_into 32x4KiB"}[k]
        fmt = "{:.3f}" if k.startswith("4mib") else "{:,.0f}"
        print(f"| {path} | {name} | {fmt.format(med(bl))} | {fmt.format(med(pl))} | "
              f"{ratio:.1f}% | >= {target}% {'ok' if ratio >= target else 'MISSED'} | {rd} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
