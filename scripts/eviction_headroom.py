#!/usr/bin/env python3
"""How much of the LRU-to-Belady gap an eviction policy could close on a
trace, and how much a reuse predictor could know (issue 33, point 4).

Replays a Mooncake-format trace (one JSON request per line with `hash_ids`,
the prefix chain of its KV blocks) the way `mooncake bench --trace` does: a
request hits its longest cached prefix, and its blocks are then touched or
put last first (the chain's head ends up most recent). Prints, at one capacity:
  - exact LRU, and LRU whose admission is told by an oracle whether a block
    is read again within H requests (blocks that are not go to a small
    probation queue evicted first): the best any admission rule can do;
  - for the block features an online policy can see when a block is first
    put (the request continues a cached prefix or not, the request's length
    in blocks, the block's place in it), the share of blocks read again
    within H requests: how well those features can predict reuse.
The official LRU, Belady and policy figures are those of `mooncake bench
--trace` and benchmarks/trace_sim (which also prints an "ever read again"
oracle); this script's LRU and Belady are its own plain replays (within 0.01
of those), used to scale the rows it adds: oracle admission by reuse
*within a horizon*, and what online features predict.

  scripts/eviction_headroom.py [--trace FILE] [--capacity 4096] [--horizon 500] [--no-belady]
"""
import argparse
import collections
import json
from collections import OrderedDict

PROBATION_SHARE = 0.02  # of capacity, for blocks the admission rule turns away


def load(path):
    with open(path) as f:
        return [json.loads(line)["hash_ids"] for line in f if line.strip()]


def next_uses(reqs):
    """(request index, block) -> index of the next request reading it."""
    out, later = {}, {}
    for i in range(len(reqs) - 1, -1, -1):
        for b in reqs[i]:
            out[(i, b)] = later.get(b, float("inf"))
        for b in reqs[i]:
            later[b] = i
    return out


def replay(reqs, capacity, admit=None):
    """Hit ratio (blocks served from the cached prefix / blocks asked);
    admit(i, block) -> False sends a new block to probation."""
    main, probation = OrderedDict(), OrderedDict()
    hits = asked = 0
    for i, r in enumerate(reqs):
        asked += len(r)
        n = 0
        while n < len(r) and (r[n] in main or r[n] in probation):
            n += 1
        hits += n
        for b in reversed(r):  # last first, as the master applies a batch
            if b in main:
                main.move_to_end(b)
                continue
            if b in probation:
                del probation[b]
                main[b] = i
                continue
            if len(main) + len(probation) >= capacity:
                if probation and (len(probation) >= PROBATION_SHARE * capacity or not main):
                    probation.popitem(last=False)
                else:
                    main.popitem(last=False)
            if admit is None or admit(i, b):
                main[b] = i
            else:
                probation[b] = i
    return hits / asked


def belady(reqs, capacity, nxt):
    """Evicts the block read again furthest in the future (slow: a heap with
    lazy deletion)."""
    import heapq
    cached, heap, hits, asked = {}, [], 0, 0
    for i, r in enumerate(reqs):
        asked += len(r)
        n = 0
        while n < len(r) and r[n] in cached:
            n += 1
        hits += n
        for b in r:
            if b not in cached and len(cached) >= capacity:
                while True:
                    when, victim = heapq.heappop(heap)
                    if cached.get(victim) == -when:
                        del cached[victim]
                        break
            cached[b] = nxt[(i, b)]
            heapq.heappush(heap, (-cached[b], b))
    return hits / asked


def feature_table(reqs, nxt, horizon):
    """Share of first-put blocks read again within `horizon`, by feature."""
    seen, table = set(), collections.defaultdict(lambda: [0, 0])
    for i, r in enumerate(reqs):
        prefix = 0
        while prefix < len(r) and r[prefix] in seen:
            prefix += 1
        for j, b in enumerate(r):
            if b in seen:
                continue
            seen.add(b)
            key = ("continues" if prefix else "fresh", f"{len(r).bit_length()}", j * 4 // len(r))
            table[key][0] += 1
            table[key][1] += nxt[(i, b)] - i <= horizon
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="../shared/traces/synthetic_trace.jsonl")
    ap.add_argument("--capacity", type=int, default=4096)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--no-belady", action="store_true", help="skip Belady (the slowest part)")
    a = ap.parse_args()
    reqs = load(a.trace)
    nxt = next_uses(reqs)
    print(f"trace {a.trace}: {len(reqs)} requests, {sum(map(len, reqs))} block reads, "
          f"capacity {a.capacity} blocks")
    lru = replay(reqs, a.capacity)
    print(f"exact LRU                                     {lru:.4f}")
    bel = None if a.no_belady else belady(reqs, a.capacity, nxt)
    if bel is not None:
        print(f"Belady                                        {bel:.4f}")
    for h in (float("inf"), 2000, 1000, a.horizon, 200):
        hr = replay(reqs, a.capacity, lambda i, b, h=h: nxt[(i, b)] - i <= h and nxt[(i, b)] < float("inf"))
        gap = f"  closes {100 * (hr - lru) / (bel - lru):.1f}% of the gap" if bel else ""
        label = "ever" if h == float("inf") else f"within {h} requests"
        print(f"LRU + oracle admission (read again {label:>20}) {hr:.4f}{gap}")
    print(f"\nshare of first-put blocks read again within {a.horizon} requests, by what an "
          f"online policy sees (prefix, log2 request blocks + 1, quarter of the request):")
    table = feature_table(reqs, nxt, a.horizon)
    for key in sorted(table, key=lambda k: (k[0], int(k[1]), k[2])):
        n, reused = table[key]
        if n >= 50:
            print(f"  {key[0]:9} len-bits {key[1]:>2} quarter {key[2]}: {n:6} blocks, "
                  f"{reused / n:.3f} read again")


if __name__ == "__main__":
    main()
