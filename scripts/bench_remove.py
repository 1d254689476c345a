#!/usr/bin/env python3
"""Issue 33 point 1 (gap A): what retiring removed objects on the stores costs
a remove and a put. One client run against one cluster (scripts/bench_remove.sh
runs it against two builds side by side): put `keys` 4 KiB keys in batches of
32 (keys/s), get each once (so the master hands out its location), remove them
one by one (latency of each remove, p50/p99 in microseconds), then upsert a
fresh set over itself (keys/s). Prints one JSON line. Printed figures, not a
timed test.
"""
import argparse
import ctypes
import json
import statistics
import time

from mooncake.store import MooncakeDistributedStore

SMALL, BATCH = 4 << 10, 32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--tag", default="r")
    args = ap.parse_args()
    store = MooncakeDistributedStore()
    rc = store.setup({"local_hostname": "127.0.0.1", "metadata_server": args.meta,
                      "global_segment_size": "0", "local_buffer_size": "0",
                      "protocol": "tcp", "master_server_address": args.master,
                      "shm": "true", "log_level": "warn"})
    assert rc == 0, rc
    buf = (ctypes.c_ubyte * (SMALL * BATCH))()
    p = ctypes.addressof(buf)
    ctypes.memset(p, 0x5a, SMALL * BATCH)
    store.register_buffer(p, SMALL * BATCH)
    ptrs = [p + i * SMALL for i in range(BATCH)]
    sizes = [SMALL] * BATCH
    keys = [f"{args.tag}-{i}" for i in range(args.keys - args.keys % BATCH)]

    def put_all(upsert):
        t0 = time.perf_counter()
        for i in range(0, len(keys), BATCH):
            ks = keys[i:i + BATCH]
            if upsert:
                rs = store.batch_upsert_from(ks, ptrs, sizes)
            else:
                rs = store.batch_put_from(ks, ptrs, sizes)
            assert all(r == 0 for r in rs), rs
        return len(keys) / (time.perf_counter() - t0)

    put_rate = put_all(False)
    for k in keys:
        store.get(k)
    lat = []
    for k in keys:
        t0 = time.perf_counter()
        rc = store.remove(k, True)  # forced: a lease the get left may live on
        lat.append((time.perf_counter() - t0) * 1e6)
        assert rc == 0, rc
    put_all(False)
    upsert_rate = put_all(True)
    store.remove_all()
    store.close()
    lat.sort()
    print(json.dumps({"put_keys_s": put_rate, "upsert_keys_s": upsert_rate,
                      "remove_p50_us": statistics.median(lat),
                      "remove_p99_us": lat[int(len(lat) * 0.99)]}))


if __name__ == "__main__":
    main()
