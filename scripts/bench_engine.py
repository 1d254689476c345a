#!/usr/bin/env python3
"""Issue 30, point 6: mooncake.engine.TransferEngine 4 MiB writes and reads
beside `mooncake bench`'s 4 MiB put/get on the same transport, run by
scripts/bench_engine.sh, for the transports named by --transports:
  tcp: over loopback (TransferEngine with MC_TE_SAME_HOST=0, bench --shm=false)
  shm: the same-host paths (TransferEngine copying into the peer's mapped
       managed buffer, bench --shm=true into the store's segment file)
  rdma: one-sided RDMA on --device (both engines initialized with "rdma";
       bench --protocol rdma --shm=false); run inside the soft-RoCE guest by
       scripts/bench_rdma.sh.

The TransferEngine side: a peer process (this script with --peer) registers
a buffer of `--peer-mib` MiB; this process writes 4 MiB pieces into it at
rotating offsets for `duration` seconds (transfer_sync_write), then reads
them back (transfer_sync_read), and checks with get_transfer_path_stats that
the path it measures is the one that moved the bytes. Each side runs `reps`
times; the table shows medians and the ratio TransferEngine / bench (the
goal is >= 0.90). Printed figures, not a timed test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PIECE = 4 << 20


def protocol_of(transport):
    return "rdma" if transport == "rdma" else "tcp"


def peer(mib, protocol, device):
    from mooncake.engine import TransferEngine
    te = TransferEngine()
    assert te.initialize("127.0.0.1", "P2PHANDSHAKE", protocol, device) == 0
    addr = te.allocate_managed_buffer(mib << 20)
    te.write_bytes_to_buffer(addr, b"\x5a" * (mib << 20), mib << 20)  # fault the pages in
    print(f"ready 127.0.0.1:{te.get_rpc_port()} {addr}", flush=True)
    sys.stdin.readline()


def te_run(te, target, local, remote, slots, duration, write):
    move = te.transfer_sync_write if write else te.transfer_sync_read
    done, i, t0 = 0, 0, time.perf_counter()
    while True:
        rc = move(target, local, remote + (i % slots) * PIECE, PIECE)
        if rc != 0:
            raise SystemExit(f"transfer failed: {rc}")
        done += PIECE
        i += 1
        t = time.perf_counter() - t0
        if t >= duration:
            return done / t / 1e9


def bench_run(args, transport):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [args.bin, "bench", "--op", "put,get", "--value-size", "4mb", "--duration",
               f"{args.duration}s", "--json", f.name, "--master", args.master, "--log-level",
               "warn", f"--shm={'true' if transport == 'shm' else 'false'}"]
        if transport == "rdma":
            cmd += ["--protocol", "rdma", "--device", args.device]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        res = {r["op"]: r for r in json.load(open(f.name))["results"] if r["target"] == "mooncake"}
    return res["put"]["bytes_per_s"] / 1e9, res["get"]["bytes_per_s"] / 1e9


def engine(transport, device):
    """A TransferEngine whose peers on this host go by `transport`."""
    from mooncake.engine import TransferEngine
    os.environ["MC_TE_SAME_HOST"] = "1" if transport == "shm" else "0"
    te = TransferEngine()
    rdma = transport == "rdma"
    assert te.initialize("127.0.0.1", "P2PHANDSHAKE", protocol_of(transport),
                         device if rdma else "") == 0
    local = te.allocate_managed_buffer(PIECE)
    te.write_bytes_to_buffer(local, b"\xa5" * PIECE, PIECE)
    return te, local


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", type=int, help="run as the peer with a buffer of this many MiB")
    ap.add_argument("--bin")
    ap.add_argument("--master")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--peer-mib", type=int, default=256)
    ap.add_argument("--transports", default="tcp,shm", help="comma list of tcp, shm, rdma")
    ap.add_argument("--device", default="", help="RDMA device(s) for the rdma transport")
    ap.add_argument("--peer-protocol", default="tcp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        return peer(args.peer, args.peer_protocol, args.device)

    transports = tuple(args.transports.split(","))
    # One peer serves every transport; it listens on RDMA too when asked.
    peer_protocol = "rdma" if "rdma" in transports else "tcp"
    p = subprocess.Popen([sys.executable, __file__, "--peer", str(args.peer_mib),
                          "--peer-protocol", peer_protocol, "--device", args.device],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        words = p.stdout.readline().split()
        assert words and words[0] == "ready", words
        target, remote = words[1], int(words[2])
        engines = {t: engine(t, args.device) for t in transports}
        slots = (args.peer_mib << 20) // PIECE
        runs = {f"{t}_{k}": [] for t in transports
                for k in ("te_write", "te_read", "bench_put", "bench_get")}
        # Alternate the sides so drift on a shared machine hits both alike.
        for _ in range(args.reps):
            for t in transports:
                te, local = engines[t]
                for op, write in (("te_write", True), ("te_read", False)):
                    runs[f"{t}_{op}"].append(
                        te_run(te, target, local, remote, slots, args.duration, write))
                put, get = bench_run(args, t)
                runs[f"{t}_bench_put"].append(put)
                runs[f"{t}_bench_get"].append(get)
        for t in transports:
            paths = engines[t][0].get_transfer_path_stats()
            assert set(paths) == {t}, f"the {t} engine moved bytes by {paths}"
    finally:
        p.kill()
        p.wait()
    med = {k: statistics.median(v) for k, v in runs.items()}
    print("| 4 MiB, 1 thread | mooncake bench (GB/s) | TransferEngine (GB/s) "
          "| TransferEngine/bench | goal |")
    print("|---|---|---|---|---|")
    for t in transports:
        for label, b, e in (("write (bench put)", "bench_put", "te_write"),
                            ("read (bench get)", "bench_get", "te_read")):
            bench, te = med[f"{t}_{b}"], med[f"{t}_{e}"]
            ratio = te / bench
            print(f"| {t} {label} | {bench:.3f} | {te:.3f} | {ratio:.2f} | "
                  f"{'ok' if ratio >= 0.90 else 'BELOW 0.90'} >= 0.90 |")
    print("runs (GB/s): " + "; ".join(f"{k} " + " ".join(f"{x:.3f}" for x in v)
                                      for k, v in runs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
