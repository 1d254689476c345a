#!/usr/bin/env python3
"""Issue 30, point 6: a dummy client of `mooncake client` beside an embedded
client on the same cluster (run by scripts/bench_dummy.sh).

Both move bytes to the same segment (the standalone client's) on the same
host: the embedded client from this process, the dummy through the
standalone client, its buffers in the shared pool (alloc_from_mem_pool).
Workloads: zero-copy put_from / get_into of 4 MiB objects (GB/s), and
batch_put_from / batch_get_into of 32 keys of 4 KiB (keys/s). In each rep
the two clients run each workload side by side, taking turns in slices of
0.1 s (which goes first alternates) until each ran `duration` seconds, so
on a shared machine both meet the same background load; every object is
removed before each put workload. The table shows the medians over the reps
and dummy / embedded.
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


# Each rep runs every workload in slices of this long, the two clients
# taking turns: on a shared machine both then meet the same background load,
# where whole 2 s runs one after the other can meet very different ones.
SLICE_S = 0.1


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


class Runner:
    """One client's steps of the four workloads (each returns the units it
    moved: bytes for 4 MiB objects, keys for batches), and the keys it put."""

    def __init__(self, store, bufs, tag):
        self.store, self.bufs, self.tag = store, bufs, tag
        self.big, self.small = [], []
        self.ptrs = [bufs.src + i * SMALL for i in range(BATCH)]
        self.dsts = [bufs.dst + i * SMALL for i in range(BATCH)]
        self.sizes = [SMALL] * BATCH

    def put_big(self):
        k = f"{self.tag}-big-{len(self.big)}"
        if self.store.put_from(k, self.bufs.src, BIG) != 0:
            return 0
        self.big.append(k)
        return BIG

    def fill(self, step):
        """Untimed puts for the gets of `step` to read: 64 objects of 4 MiB
        (both clients' fit the segment together) or 100 batches."""
        for _ in range(64 if step == "get_big" else 100):
            (self.put_big if step == "get_big" else self.put_batch)()

    def get_big(self):
        n = self.store.get_into(random.choice(self.big[-64:] or ["none"]), self.bufs.dst, BIG)
        return n if n > 0 else 0

    def put_batch(self):
        ks = [f"{self.tag}-small-{len(self.small) + i}" for i in range(BATCH)]
        ok = sum(1 for r in self.store.batch_put_from(ks, self.ptrs, self.sizes) if r == 0)
        self.small.extend(ks)
        return ok

    def get_batch(self):
        recent = self.small[-100 * BATCH:]
        start = random.randrange(0, max(1, len(recent) - BATCH))
        ks = recent[start:start + BATCH]
        got = self.store.batch_get_into(ks, self.dsts[:len(ks)], self.sizes[:len(ks)])
        return sum(1 for r in got if r > 0)


def side_by_side(runners, step, duration):
    """Rates (units/s) of `step` per client, the clients taking turns in
    slices of SLICE_S until each ran `duration` seconds."""
    done = {name: 0 for name in runners}
    spent = {name: 0.0 for name in runners}
    turn = 0
    while min(spent.values()) < duration:
        names = list(runners)
        for name in names[turn % 2:] + names[:turn % 2]:  # who goes first alternates
            units, seconds = timed(SLICE_S, getattr(runners[name], step))
            done[name] += units
            spent[name] += seconds
        turn += 1
    return {name: done[name] / spent[name] for name in runners}


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
    steps = ["put_big", "get_big", "put_batch", "get_batch"]
    for rep in range(a.reps):
        runners = {name: Runner(store, bufs, f"{name}-{rep}")
                   for name, (store, bufs) in clients.items()}
        for w, step in zip(WORKLOADS, steps):
            # The same empty segment for both. A get reads keys its own client
            # put just before: a slice of the other's 4 MiB puts can overwrite
            # the whole segment (evicting every older key).
            for store, _ in clients.values():
                store.remove_all(True)
            if step.startswith("get"):
                for r in runners.values():
                    r.fill(step)
            rates = side_by_side(runners, step, a.duration)
            for name, r in rates.items():
                figures[name][w].append(r / 1e9 if "GB/s" in w else r)
        print(f"rep {rep + 1}/{a.reps} done, load {open('/proc/loadavg').read().split()[0]}",
              file=sys.stderr, flush=True)
    embedded.remove_all(True)

    # The ratio of the medians, and the median of each rep's ratio (the two
    # clients of one rep ran side by side, so it cancels load drift between reps).
    print("\n| workload | embedded | dummy | dummy / embedded | median of per-rep ratios |")
    print("|---|---|---|---|---|")
    out = {}
    for w in WORKLOADS:
        e = statistics.median(figures["embedded"][w])
        d = statistics.median(figures["dummy"][w])
        fmt = "{:,.2f}" if "GB/s" in w else "{:,.0f}"
        per_rep = statistics.median(
            x / y for x, y in zip(figures["dummy"][w], figures["embedded"][w]) if y > 0)
        print(f"| {w} | {fmt.format(e)} | {fmt.format(d)} | {d / e:.0%} | {per_rep:.0%} |")
        out[w] = {"embedded": figures["embedded"][w], "dummy": figures["dummy"][w],
                  "median_embedded": e, "median_dummy": d, "ratio": d / e,
                  "median_per_rep_ratio": per_rep}
    print(f"\nload at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    dummy.close()
    embedded.close()


if __name__ == "__main__":
    main()
