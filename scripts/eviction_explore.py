#!/usr/bin/env python3
"""Which online eviction ideas close the LRU-to-Belady gap on a trace, and
why none closes 25% (issue 33, point 4).

Replays a Mooncake-format trace (one JSON request a line, `hash_ids` its
prefix chain of KV blocks) as `mooncake bench --trace` and
benchmarks/trace_sim do: a request hits its longest cached prefix; its hit
blocks are then touched and its other blocks put, last first. Every row is
a hit ratio and the share of the gap between exact LRU (chain order, the
official yardstick) and Belady it closes, at one capacity:

  1. the yardsticks: exact LRU, and Belady's MIN as trace_sim computes it
     (demand MIN: every put admitted, the victim is the block whose next
     request is farthest; ties between blocks of one request go to the
     larger hash id, i.e. the chain's tail), with the opposite tie rule
     beside it to show how much the figure depends on it;
  2. online families, each over a small grid of its parameters: probation
     (2Q/S3-FIFO, as src/eviction/probation.*) with and without ghosts of
     main's victims; two classes (blocks seen once go first) with a ghost
     that remembers counts; LRFU (decayed frequency); LRU-2 style (the
     last inter-reference gap); S3-FIFO; W-TinyLFU; and a hazard policy whose table
     P(read again soon | use count, idle time) is *fitted on this very
     trace*, so it is an upper bound for count-and-age policies;
  3. popularity oracles (not online): keep blocks by the total, the
     remaining, or the rate of their requests over the whole trace;
  4. how good a prediction would have to be: each request's new blocks (one
     put batch) are kept with the read blocks in LRU order or are the first
     to go, judged by an oracle that knows whether any of them is read
     again, with a seeded share of its judgements reversed, and by the batch's
     length, the best such signal a master sees (on the shared trace a fresh
     chain of 60+ blocks is read again in 64-79% of cases, one under 10
     blocks in 5%);
  5. where the gap lies: hit blocks by the k-th request of a chain (the
     requests sharing a first block) for LRU, the best online row, Belady.

Time is the request index. Pure python, no dependencies; ~2-6 minutes on
a loaded 2-core machine (--quick: the best of each family only).

  scripts/eviction_explore.py [--trace FILE] [--capacity 4096] [--quick]
"""
import argparse
import bisect
import collections
import heapq
import json
import math
import random
from collections import OrderedDict

NEVER = 1 << 60


def load(path):
    with open(path) as f:
        return [json.loads(line)["hash_ids"] for line in f if line.strip()]


def next_uses(reqs):
    """nxt[i][j]: the next request after i holding block j of request i."""
    nxt, later = [], {}
    for i in range(len(reqs) - 1, -1, -1):
        nxt.append([later.get(b, NEVER) for b in reqs[i]])
        for b in reqs[i]:
            later[b] = i
    nxt.reverse()
    return nxt


def replay(reqs, pol, capacity, by_chain=None, orphans=None):
    """Hit ratio; `by_chain` (a Counter) gets hit blocks by the k-th request
    of the request's first block (k capped at 6); `orphans` (a list) gets,
    every 200 requests, the share of cached blocks whose chain parent is not
    cached (blocks no request can reach: what prefix-aware eviction frees)."""
    hits = asked = 0
    seen = collections.Counter()
    parent = {b: a for r in reqs for a, b in zip(r, r[1:])} if orphans is not None else {}
    blocks = set(parent) | set(parent.values())
    for i, r in enumerate(reqs):
        if orphans is not None and i % 200 == 199:
            cached = [b for b in blocks if pol.contains(b)]
            lost = sum(1 for b in cached if b in parent and not pol.contains(parent[b]))
            orphans.append(lost / max(1, len(cached)))
        asked += len(r)
        n = 0
        while n < len(r) and pol.contains(r[n]):
            n += 1
        hits += n
        if by_chain is not None:
            seen[r[0]] += 1
            by_chain[min(seen[r[0]], 6)] += n
        if hasattr(pol, "begin"):
            pol.begin(i, n, r)
        for j in pol.order(range(n)):
            pol.access(r[j], i, j)
        for j in pol.order(range(n, len(r))):
            if pol.contains(r[j]):
                pol.access(r[j], i, j)
                continue
            if pol.size() >= capacity:
                pol.evict()
            pol.insert(r[j], i, j)
    return hits / asked


class Policy:
    head_first = False  # touch order: last first, as the master applies a batch

    def order(self, rng):
        return rng if self.head_first else reversed(rng)

    def insert(self, b, i, j):
        self.access(b, i, j)


class Lru(Policy):
    def __init__(self, head_first=False):
        self.d, self.head_first = OrderedDict(), head_first

    def contains(self, b):
        return b in self.d

    def size(self):
        return len(self.d)

    def access(self, b, i, j):
        self.d[b] = 1
        self.d.move_to_end(b)

    def evict(self):
        self.d.popitem(last=False)


class HeapPolicy(Policy):
    """Evicts the least score(b, i, j) (fixed between a block's uses)."""

    def __init__(self):
        self.cur, self.heap = {}, []

    def contains(self, b):
        return b in self.cur

    def size(self):
        return len(self.cur)

    def set_score(self, b, s):
        self.cur[b] = s
        heapq.heappush(self.heap, (s, b))

    def evict(self):
        while True:
            s, b = heapq.heappop(self.heap)
            if self.cur.get(b) == s:
                del self.cur[b]
                self.evicted(b)
                return

    def evicted(self, b):
        pass


class Belady(HeapPolicy):
    head_first = True  # the order does not matter: it only sees next uses

    def __init__(self, nxt, tail_first_ties=True):
        super().__init__()
        self.nxt, self.sign = nxt, -1 if tail_first_ties else 1

    def access(self, b, i, j):
        self.set_score(b, (-self.nxt[i][j], self.sign * b))


class Probation(Policy):
    """New keys in probation (share of the pool), read again or a ghost: main."""

    def __init__(self, capacity, share, ghosts_x, main_ghosts):
        self.p, self.m, self.g = OrderedDict(), OrderedDict(), OrderedDict()
        self.share, self.gmax, self.main_ghosts = share, int(ghosts_x * capacity), main_ghosts

    def contains(self, b):
        return b in self.p or b in self.m

    def size(self):
        return len(self.p) + len(self.m)

    def access(self, b, i, j):
        self.p.pop(b, None)
        self.m[b] = 1
        self.m.move_to_end(b)

    def insert(self, b, i, j):
        if self.g.pop(b, None):
            self.m[b] = 1
        else:
            self.p[b] = 1

    def ghost(self, b):
        self.g[b] = 1
        if len(self.g) > self.gmax:
            self.g.popitem(last=False)

    def evict(self):
        if self.p and (len(self.p) > self.share * self.size() or not self.m):
            self.ghost(self.p.popitem(last=False)[0])
        else:
            b = self.m.popitem(last=False)[0]
            if self.main_ghosts:
                self.ghost(b)


class S3Fifo(Policy):
    """S3-FIFO (Yang et al. 2023): a small FIFO, a main FIFO with CLOCK-style
    reinsertion (use counts capped at 3), a ghost FIFO of ghosts_x * capacity
    keys; a block leaving the small queue unread becomes a ghost."""

    def __init__(self, capacity, small, ghosts_x):
        self.s, self.m, self.g, self.f = OrderedDict(), OrderedDict(), OrderedDict(), {}
        self.smax, self.gmax = small * capacity, int(ghosts_x * capacity)

    def contains(self, b):
        return b in self.f

    def size(self):
        return len(self.f)

    def access(self, b, i, j):
        self.f[b] = min(self.f[b] + 1, 3)

    def insert(self, b, i, j):
        self.f[b] = 0
        (self.m if self.g.pop(b, None) else self.s)[b] = 1

    def evict(self):
        while True:
            if self.s and (len(self.s) >= self.smax or not self.m):
                b = self.s.popitem(last=False)[0]
                if self.f[b] > 0:
                    self.f[b] = 0
                    self.m[b] = 1
                    continue
                del self.f[b]
                self.g[b] = 1
                if len(self.g) > self.gmax:
                    self.g.popitem(last=False)
                return
            b = self.m.popitem(last=False)[0]
            if self.f[b] > 0:
                self.f[b] -= 1
                self.m[b] = 1
                continue
            del self.f[b]
            return


class CountedHistory(HeapPolicy):
    """Per-key use counts (one a request) that outlive eviction in a FIFO
    ghost of ghosts_x * capacity keys."""

    def __init__(self, capacity, ghosts_x):
        super().__init__()
        self.hist, self.g, self.gmax = {}, OrderedDict(), int(ghosts_x * capacity)

    def use(self, b, i):
        self.g.pop(b, None)
        k, last, prev = self.hist.get(b, (0, -1, -1))
        if last != i:
            k, prev, last = k + 1, last, i
        self.hist[b] = (k, last, prev)
        return k, last, prev

    def evicted(self, b):
        self.g[b] = 1
        if len(self.g) > self.gmax:
            self.forget(self.g.popitem(last=False)[0])

    def forget(self, b):
        del self.hist[b]


class TwoClass(CountedHistory):
    """Blocks seen in one request only go first; LRU within each class."""

    def access(self, b, i, j):
        k, _, _ = self.use(b, i)
        self.set_score(b, (k >= 2, i, -j))


class Lru2(CountedHistory):
    """Score last - beta * (last - previous use); first-seen blocks last - penalty."""

    def __init__(self, capacity, ghosts_x, beta, penalty):
        super().__init__(capacity, ghosts_x)
        self.beta, self.penalty = beta, penalty

    def access(self, b, i, j):
        k, last, prev = self.use(b, i)
        s = last - self.beta * (last - prev) if k >= 2 else last - self.penalty
        self.set_score(b, (s, -j))


class Lrfu(CountedHistory):
    """Decayed frequency sum exp(-(now - t_use) / tau): its order is fixed
    between uses, so the key log(value) + t / tau sorts it exactly."""

    def __init__(self, capacity, ghosts_x, tau):
        super().__init__(capacity, ghosts_x)
        self.tau, self.val = tau, {}

    def access(self, b, i, j):
        v, t = self.val.get(b, (0.0, i))
        v = v * math.exp(-(i - t) / self.tau) + (t != i or v == 0)
        self.val[b] = (v, i)
        self.use(b, i)
        self.set_score(b, (math.log(v) + i / self.tau, -j))

    def forget(self, b):
        super().forget(b)
        del self.val[b]


class WTinyLfu(Policy):
    """A window LRU; its victims enter main only if used more often (counts
    halved every reset_x * capacity uses) than main's victim."""

    def __init__(self, capacity, window, reset_x):
        self.w, self.p, self.cap = OrderedDict(), OrderedDict(), capacity
        self.wmax = max(1, int(window * capacity))
        self.f, self.adds, self.reset, self.last = {}, 0, int(reset_x * capacity), {}

    def contains(self, b):
        return b in self.w or b in self.p

    def size(self):
        return len(self.w) + len(self.p)

    def count(self, b, i):
        if self.last.get(b) == i:
            return
        self.last[b] = i
        self.f[b] = self.f.get(b, 0) + 1
        self.adds += 1
        if self.adds >= self.reset:
            self.adds = 0
            self.f = {k: v // 2 for k, v in self.f.items() if v // 2}
            self.last = {k: v for k, v in self.last.items() if k in self.f}

    def access(self, b, i, j):
        self.count(b, i)
        (self.w if b in self.w else self.p).move_to_end(b)

    def insert(self, b, i, j):
        self.count(b, i)
        self.w[b] = 1
        if len(self.w) > self.wmax:  # room was made: main takes the window's end
            self.p[self.w.popitem(last=False)[0]] = 1

    def evict(self):
        if len(self.w) >= self.wmax and self.p:
            cand = self.w.popitem(last=False)[0]
            victim = next(iter(self.p))
            if self.f.get(cand, 0) > self.f.get(victim, 0):
                del self.p[victim]
                self.p[cand] = 1
        else:
            (self.p if self.p else self.w).popitem(last=False)


class Hazard(Policy):
    """One LRU queue per use count; the victim is the queue end whose
    P(read within `horizon` requests | count, idle time) is lowest, from a
    table fitted on the whole trace (an upper bound for this family)."""
    K, AGES = 8, 14

    def __init__(self, reqs, nxt, horizon):
        self.q = [OrderedDict() for _ in range(self.K + 1)]
        self.where, self.cnt, self.now = {}, {}, 0
        events, cnt = collections.defaultdict(list), collections.Counter()
        for i, r in enumerate(reqs):
            for j, b in enumerate(r):
                cnt[b] += 1
                events[min(cnt[b], self.K)].append(nxt[i][j] - i)
        self.table = {}
        for k, gaps in events.items():
            gaps.sort()
            for m in range(self.AGES):
                age = (1 << m) - 1
                lo, hi = bisect.bisect_right(gaps, age), bisect.bisect_right(gaps, age + horizon)
                self.table[(k, m)] = (hi - lo) / (len(gaps) - lo) if len(gaps) > lo else 0.0

    def contains(self, b):
        return b in self.where

    def size(self):
        return len(self.where)

    def access(self, b, i, j):
        self.now = i
        if b in self.where:
            del self.q[self.where[b]][b]
        k = min(self.cnt.get(b, 0) + 1, self.K)
        self.cnt[b] = k
        self.q[k][b] = i
        self.where[b] = k

    def evict(self):
        best = None
        for k in range(1, self.K + 1):
            if self.q[k]:
                b, last = next(iter(self.q[k].items()))
                h = self.table[(k, min((self.now - last).bit_length(), self.AGES - 1))]
                if best is None or h < best[0]:
                    best = (h, k, b)
        _, k, b = best
        del self.q[k][b]
        del self.where[b]


class Admission(Policy):
    """Each request's new blocks are judged together, as one put batch: kept
    (LRU with every read block) or first to go (FIFO, before any kept one).
    `predict(i, n, r)` says which; with `flip`, a seeded coin reverses that
    share of the judgements."""

    def __init__(self, predict, flip=0.0, seed=1):
        self.keep, self.drop, self.predict = OrderedDict(), OrderedDict(), predict
        self.flip, self.rng = flip, random.Random(seed)

    def contains(self, b):
        return b in self.keep or b in self.drop

    def size(self):
        return len(self.keep) + len(self.drop)

    def begin(self, i, n, r):
        self.good = self.predict(i, n, r) != (self.rng.random() < self.flip)

    def access(self, b, i, j):
        self.drop.pop(b, None)
        self.keep[b] = 1
        self.keep.move_to_end(b)

    def insert(self, b, i, j):
        (self.keep if self.good else self.drop)[b] = 1

    def evict(self):
        (self.drop if self.drop else self.keep).popitem(last=False)


class Oracle(HeapPolicy):
    """Keeps blocks by a score that knows the whole trace."""

    def __init__(self, reqs, kind):
        super().__init__()
        self.kind, self.total = kind, collections.Counter(b for r in reqs for b in r)
        self.first, self.last = {}, {}
        for i, r in enumerate(reqs):
            for b in r:
                self.first.setdefault(b, i)
                self.last[b] = i
        self.left = collections.Counter(self.total)

    def access(self, b, i, j):
        self.left[b] -= 1
        if self.kind == "total requests":
            s = self.total[b]
        elif self.kind == "remaining requests":
            s = self.left[b]
        elif self.kind == "rate over its lifetime":
            s = (self.total[b] - 1) / (self.last[b] - self.first[b] + 50) if i < self.last[b] else -1
        else:  # remaining rate
            s = self.left[b] / (self.last[b] - i + 50) if self.left[b] else -1
        self.set_score(b, (s, i, -j))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="../shared/traces/synthetic_trace.jsonl")
    ap.add_argument("--capacity", type=int, default=4096)
    ap.add_argument("--quick", action="store_true", help="only the best row of each family")
    a = ap.parse_args()
    reqs, cap = load(a.trace), a.capacity
    nxt = next_uses(reqs)
    print(f"trace {a.trace}: {len(reqs)} requests, {sum(map(len, reqs))} block reads, "
          f"capacity {cap} blocks; gap closed = (policy - exact LRU) / (Belady - exact LRU)")
    chains = {}
    lru = replay(reqs, Lru(head_first=True), cap, chains.setdefault("exact LRU", collections.Counter()))
    bel = replay(reqs, Belady(nxt), cap, chains.setdefault("Belady", collections.Counter()))
    best = [None]

    def row(label, hr, family=None):
        print(f"  {label:58} {hr:.4f} {100 * (hr - lru) / (bel - lru):6.1f}%", flush=True)
        if family and (best[0] is None or hr > best[0][1]):
            best[0] = (label, hr, family)

    print("\n1. yardsticks")
    row("exact LRU, chain order (the official yardstick)", lru)
    row("Belady, demand MIN, ties to the tail (trace_sim's)", bel)
    row("Belady, ties to the head", replay(reqs, Belady(nxt, tail_first_ties=False), cap))
    row("LRU touching last first (the master's order)", replay(reqs, Lru(), cap))

    q = a.quick
    families = [
        ("probation share %.2f, ghosts %.1fx, main's victims %s",
         [(0.10, 2, False), (0.10, 2, True), (0.02, 2, True), (0.0, 2, True), (0.0, 3, True)],
         [(0.0, 2, True)],
         lambda s, g, mg: Probation(cap, s, g, mg)),
        ("two classes (seen once go first), count ghosts %.0fx", [(1,), (2,), (4,)], [(2,)],
         lambda g: TwoClass(cap, g)),
        ("LRFU tau %d requests, ghosts %.0fx", [(100, 4), (300, 4), (1000, 4)], [(300, 4)],
         lambda t, g: Lrfu(cap, g, t)),
        ("LRU-2: last - %.2f x last gap, new -%d, ghosts 2x", [(0.25, 1000), (0.5, 1000), (0.25, 3000)],
         [(0.25, 1000)], lambda beta, pen: Lru2(cap, 2, beta, pen)),
        ("S3-FIFO small queue %.2f, ghosts %.0fx", [(0.1, 1), (0.1, 2), (0.02, 2)], [(0.1, 1)],
         lambda sm, g: S3Fifo(cap, sm, g)),
        ("W-TinyLFU window %.2f, counts halved every %dx", [(0.01, 4), (0.2, 4)], [(0.01, 4)],
         lambda w, r: WTinyLfu(cap, w, r)),
        ("hazard by (count, idle), fitted on the trace, within %d", [(100,), (300,), (1000,)], [(100,)],
         lambda h: Hazard(reqs, nxt, h)),
    ]
    print("\n2. online policies (no future knowledge except the fitted hazard table)")
    for fmt, grid, quick_grid, make in families:
        for params in (quick_grid if q else grid):
            row(fmt % params, replay(reqs, make(*params), cap), (make, params))
    print("\n3. popularity oracles (know each block's future requests)")
    for kind in ("total requests", "remaining requests", "rate over its lifetime", "remaining rate"):
        row(f"keep by {kind}", replay(reqs, Oracle(reqs, kind), cap))

    print("\n4. how well must a policy foresee which put batches will be read again? (each request's\n"
          "   new blocks kept, LRU with all read blocks, or first to go; the judgement per request)")
    reused = lambda i, n, r: any(nxt[i][j] < NEVER for j in range(n, len(r)))  # noqa: E731
    for flip in ((0.0, 0.1) if q else (0.0, 0.05, 0.1, 0.2, 0.3)):
        row(f"reuse foreseen, {100 * flip:.0f}% of requests judged wrong",
            replay(reqs, Admission(reused, flip), cap))
    for t in ((60,) if q else (10, 30, 60)):
        row(f"kept if the batch has >= {t} blocks (a master sees this)",
            replay(reqs, Admission(lambda i, n, r: len(r) - n >= t), cap))

    label, _, (make, params) = best[0]
    lru_orphans, best_orphans = [], []
    replay(reqs, Lru(), cap, orphans=lru_orphans)
    replay(reqs, make(*params), cap, chains.setdefault("best online", collections.Counter()),
           best_orphans)
    print("\nblocks whose chain parent is not cached (unreachable), share of the cache every 200 "
          f"requests: LRU last first max {max(lru_orphans):.3f}, best online max "
          f"{max(best_orphans):.3f}\n(touching a request last first keeps a chain's prefix at least as "
          "recent as its tail, so evicting orphans at once has nothing to free)")
    print(f"\n5. hit blocks by the k-th request of a chain (best online: {label})")
    asked, seen = collections.Counter(), collections.Counter()
    for r in reqs:
        seen[r[0]] += 1
        asked[min(seen[r[0]], 6)] += len(r)
    print(f"  {'k':>3} {'blocks':>8}" + "".join(f" {n:>12}" for n in chains))
    for k in sorted(asked):
        print(f"  {k:>3}{'+' if k == 6 else ' '}{asked[k]:>7}" +
              "".join(f" {c[k]:>12}" for c in chains.values()))


if __name__ == "__main__":
    main()
