#!/usr/bin/env python3
"""Issue 30, point 6: a dummy client of `mooncake client` beside an embedded
client on the same cluster (run by scripts/bench_dummy.sh).

Both move bytes to the same segment (the standalone client's) on the same
host: the embedded client from this process, the dummy through the
standalone client, its buffers in the shared pool (alloc_from_mem_pool).
Workloads: zero-copy put_from / get_into of 4 MiB objects (GB/s), and
batch_put_from / batch_get_into of 32 keys of 4 KiB (keys/s). Each rep runs
both clients one after the other (which goes first alternates), after
removing every object; the table shows the medians and dummy / embedded.
Printed figures, not a timed test.
"""
import argparse
import ctypes
import json
import random
import statistics
import sys

from mooncake.store import MooncakeDistributedStore

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_python import BATCH, BIG, SMALL, timed  # noqa: E402  (the same workloads)

WORKLOADS = ["put_from 4 MiB (GB/s)", "get_into 4 MiB (GB/s)",
             "batch_put_from 32x4 KiB (keys/s)", "batch_get_into 32x4 KiB (keys/s)"]


def rate(duration, step):
    """Units step() moves per second, run for `duration` seconds."""
    done, seconds = timed(duration, step)
    return done / seconds


class Buffers:
    """Two buffers of `size` bytes each: the caller's registered memory for
    the embedded client, the shared pool for the dummy."""

    def __init__(self, store, size, dummy):
        if dummy:
            self.src = store.alloc_from_mem_pool(size)
            self.dst = store.alloc_from_mem_pool(size)
            assert self.src and self.dst, "the dummy pool is too small"
        else:
            self.keep = [(ctypes.c_ubyte * size)(), (ctypes.c_ubyte * size)()]
            self.src, self.dst = (ctypes.addressof(b) for b in self.keep)
            assert store.register_buffer(self.src, size) == 0
            assert store.register_buffer(self.dst, size) == 0
        ctypes.memset(self.src, 0x5A, size)


def run_big(store, bufs, duration, tag):
    keys = []

    def put():
        k = f"{tag}-{len(keys)}"
        if store.put_from(k, bufs.src, BIG) != 0:
            return 0
        keys.append(k)
        return BIG

    put_rate = rate(duration, put) / 1e9
    recent = keys[-100:] or ["none"]

    def get():
        n = store.get_into(random.choice(recent), bufs.dst, BIG)
        return n if n > 0 else 0

    return put_rate, rate(duration, get) / 1e9


def run_batch(store, bufs, duration, tag):
    ptrs, sizes = [bufs.src + i * SMALL for i in range(BATCH)], [SMALL] * BATCH
    dsts = [bufs.dst + i * SMALL for i in range(BATCH)]
    written = []

    def put():
        ks = [f"{tag}-{len(written) + i}" for i in range(BATCH)]
        ok = sum(1 for r in store.batch_put_from(ks, ptrs, sizes) if r == 0)
        written.extend(ks)
        return ok

    put_rate = rate(duration, put)
    recent = written[-100 * BATCH:]

    def get():
        start = random.randrange(0, max(1, len(recent) - BATCH))
        ks = recent[start:start + BATCH]
        return sum(1 for r in store.batch_get_into(ks, dsts[:len(ks)], sizes[:len(ks)]) if r > 0)

    return put_rate, rate(duration, get)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--client", required=True, help="the mooncake client's host:port")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()

    embedded = MooncakeDistributedStore()
    assert embedded.setup("127.0.0.1", a.meta, 0, 64 << 20, "tcp", "", a.master) == 0
    dummy = MooncakeDistributedStore()
    assert dummy.setup_dummy(2 * BIG + (64 << 20), 16 << 20, a.client) == 0
    clients = {"embedded": (embedded, Buffers(embedded, BIG, False)),
               "dummy": (dummy, Buffers(dummy, BIG, True))}
    figures = {name: {w: [] for w in WORKLOADS} for name in clients}
    for rep in range(a.reps):
        order = ["embedded", "dummy"] if rep % 2 == 0 else ["dummy", "embedded"]
        for name in order:
            store, bufs = clients[name]
            store.remove_all(True)
            put, get = run_big(store, bufs, a.duration, f"big-{name}-{rep}")
            store.remove_all(True)
            bput, bget = run_batch(store, bufs, a.duration, f"batch-{name}-{rep}")
            for w, v in zip(WORKLOADS, (put, get, bput, bget)):
                figures[name][w].append(v)
        print(f"rep {rep + 1}/{a.reps} done", file=sys.stderr, flush=True)
    embedded.remove_all(True)

    print("\n| workload | embedded | dummy | dummy / embedded |")
    print("|---|---|---|---|")
    out = {}
    for w in WORKLOADS:
        e = statistics.median(figures["embedded"][w])
        d = statistics.median(figures["dummy"][w])
        fmt = "{:,.2f}" if "GB/s" in w else "{:,.0f}"
        print(f"| {w} | {fmt.format(e)} | {fmt.format(d)} | {d / e:.0%} |")
        out[w] = {"embedded": figures["embedded"][w], "dummy": figures["dummy"][w],
                  "median_embedded": e, "median_dummy": d, "ratio": d / e}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    dummy.close()
    embedded.close()


if __name__ == "__main__":
    main()
