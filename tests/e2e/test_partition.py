"""Partitions and slow peers between real processes (issue 22, point 4).

The test builds its own network: a hub namespace with a bridge, and one
namespace each for the master, two stores and a client, joined to it by veth
pairs, on 10.77.0.0/24 (which exists only inside these namespaces). A
partition is an nftables drop inside the namespace of one end; loss and
delay are tc netem where the kernel has it, else an nftables random drop and
a tbf rate limit. Shown:
 (a) a client partitioned from a store fails its transfer within
     transfer_timeout (plus slack) and a get reads the other replica;
 (b) a store partitioned from the master is declared dead after client_ttl,
     gets no new allocations, and mounts again cleanly once healed;
 (c) a client partitioned from the master exits 4 "master unavailable"
     within rpc_timeout x rpc_retries (plus slack);
 (d) under loss and delay nothing hangs, every acknowledged object reads
     back byte for byte, and no get ever returns wrong bytes.
Every process is stopped by its pid and every namespace deleted in
`finally`, even on failure; names carry this run's pid and a random tag.
Exits 77 (skipped) where network namespaces or nft are not available.
"""
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import harness
import netns
from harness import BIN, check, finish, stop, tempdir, wait_until

SEED = int(os.environ.get("MC_SEED", random.randrange(1 << 30)))
print(f"seed {SEED} (MC_SEED={SEED} replays)")
rng = random.Random(SEED)

TAG = f"{os.getpid() % 100000}{rng.randrange(1000):03d}"
PREFIX = f"mcpt{TAG}"
NET = "10.77.0"
ADDR = {"m": f"{NET}.1", "s1": f"{NET}.2", "s2": f"{NET}.3", "c": f"{NET}.4"}
HUB_ADDR = f"{NET}.254"
RPC_PORT, ADMIN_PORT, META_PORT, DATA_PORT = 50051, 9003, 8080, 17000

# Short settings keep the run fast; slack absorbs a loaded 2-core machine and
# the sanitizer build (bounds are checked, never tight timings).
CLIENT_TTL_S = 4
TRANSFER_TIMEOUT_S = 2
RPC_TIMEOUT_S, RPC_RETRIES = 1, 3
# A store's ping fails after at most 2 x 1 s: a loaded machine may lose one,
# never the client_ttl's worth that would declare a healthy store dead.
STORE_RPC = ["--rpc-timeout", "1s", "--rpc-retries", "2"]
SLACK_S = 10
CMD_TIMEOUT_S = 60  # a command still running after this counts as a hang

NODES = ["m", "s1", "s2", "c"]


LAN = netns.Network(PREFIX, ADDR, hub_addr=HUB_ADDR)
ns = LAN.ns
HUB = LAN.hub
sh = netns.sh


def skip(why):
    print(f"SKIP: {why}")
    for d in harness._tempdirs + [harness._san_dir]:  # nothing ran: nothing to keep
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(77)


# ---- the network -------------------------------------------------------------

# Each node gets empty chains for partitions and for loss.
RULESET = ("table inet mcpart {\n"
           " chain part_in { type filter hook input priority 0; }\n"
           " chain part_out { type filter hook output priority 0; }\n"
           " chain loss_in { type filter hook input priority 1; }\n"
           " chain loss_out { type filter hook output priority 1; }\n}\n")


def build_network():
    LAN.build({node: RULESET for node in NODES})


def remove_network():
    LAN.remove()


def nft(node, *rule):
    sh("ip", "netns", "exec", ns(node), "nft", *rule)


def partition(a, b):
    """Drops everything between nodes a and b, in a's namespace."""
    nft(a, "add", "rule", "inet", "mcpart", "part_in", "ip", "saddr", ADDR[b], "drop")
    nft(a, "add", "rule", "inet", "mcpart", "part_out", "ip", "daddr", ADDR[b], "drop")


def heal(a):
    nft(a, "flush", "chain", "inet", "mcpart", "part_in")
    nft(a, "flush", "chain", "inet", "mcpart", "part_out")


def has_netem():
    p = sh("ip", "netns", "exec", HUB, "tc", "qdisc", "add", "dev", "vm", "root", "netem",
           "delay", "1ms", ok=False)
    if p.returncode == 0:
        sh("ip", "netns", "exec", HUB, "tc", "qdisc", "del", "dev", "vm", "root")
    return p.returncode == 0


def impair(slow_node):
    """Loss and delay on every link; `slow_node` also gets a slow link.
    Returns a description of what was applied."""
    if has_netem():
        for node in NODES:
            for where, dev in ((ns(node), "eth0"), (HUB, f"v{node}")):
                sh("ip", "netns", "exec", where, "tc", "qdisc", "add", "dev", dev, "root", "netem",
                   "delay", "15ms", "10ms", "loss", "2%")
        what = "netem delay 15ms +-10ms loss 2% each way on every link"
    else:
        for node in NODES:
            for chain in ("loss_in", "loss_out"):
                nft(node, "add", "rule", "inet", "mcpart", chain, "numgen", "random", "mod", "100",
                    "<", "2", "drop")
        what = "netem not in this kernel: nft random drop 2% each way on every node"
    for where, dev in ((ns(slow_node), "eth0"), (HUB, f"v{slow_node}")):
        sh("ip", "netns", "exec", where, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
           "rate", "40mbit", "burst", "64kb", "latency", "200ms")
    return what + f"; tbf 40 Mbit/s both ways on {slow_node}"


def unimpair():
    for node in NODES:
        for chain in ("loss_in", "loss_out"):
            nft(node, "flush", "chain", "inet", "mcpart", chain)
        for where, dev in ((ns(node), "eth0"), (HUB, f"v{node}")):
            sh("ip", "netns", "exec", where, "tc", "qdisc", "del", "dev", dev, "root", ok=False)


# ---- processes in namespaces -------------------------------------------------

ENV = {"MOONCAKE_MASTER": f"{ADDR['m']}:{RPC_PORT}",
       "MOONCAKE_TE_META_DATA_SERVER": f"http://{ADDR['m']}:{META_PORT}/metadata"}
CLIENT_FLAGS = ["--no-shm", "--transfer-timeout", f"{TRANSFER_TIMEOUT_S}s",
                "--rpc-timeout", f"{RPC_TIMEOUT_S}s", "--rpc-retries", str(RPC_RETRIES)]
logdir = tempdir("mooncake-partition-")


def start_in(node, args, log_name):
    return LAN.start_in(node, [BIN] + args, os.path.join(logdir, log_name), ENV)


class Outcome:
    def __init__(self, rc, out, err, secs):
        self.rc, self.out, self.err, self.secs = rc, out, err, secs


def client(args, input=None, node="c"):
    """Runs one client command in `node`'s namespace; a hang is rc None."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(["ip", "netns", "exec", ns(node), BIN] + args[:1] + CLIENT_FLAGS + args[1:],
                           input=input, env=harness._child_env(ENV), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=CMD_TIMEOUT_S)
        return Outcome(p.returncode, p.stdout, p.stderr.decode(errors="replace"),
                       time.monotonic() - t0)
    except subprocess.TimeoutExpired:  # run() killed it by its pid
        return Outcome(None, b"", "hung", time.monotonic() - t0)


def admin(path):
    """GET on the master's admin port, from the hub (never partitioned)."""
    p = sh("ip", "netns", "exec", HUB, "curl", "-s", "-m", "5",
           f"http://{ADDR['m']}:{ADMIN_PORT}{path}", ok=False)
    return p.stdout.decode(errors="replace") if p.returncode == 0 else ""


def segments():
    return [l for l in admin("/get_all_segments").splitlines() if l.strip()]


def holders(key):
    """Store endpoints of the key's replicas, in the master's order."""
    return re.findall(r"10\.77\.0\.\d+:\d+", admin(f"/query_key?key={key}"))


def payload(key, size):
    block = hashlib.sha256(key.encode()).digest() * 2048
    return (block * (size // len(block) + 1))[:size]


acked = {}  # key -> bytes, every put that returned 0


def put(key, size, replicas):
    data = payload(key, size)
    o = client(["put", key, "-", "--replicas", str(replicas)], input=data)
    if o.rc == 0:
        acked[key] = data
    return o


def get_ok(key):
    o = client(["get", key])
    return o.rc == 0 and o.out == acked[key], o


# ---- the scenarios -----------------------------------------------------------

def scenario_client_store(store_ep):
    """(a) Client partitioned from one store."""
    r2 = [f"r2-{i}" for i in range(6)]
    for k in r2:
        check(put(k, rng.randrange(1 << 10, 3 << 19), 2).rc == 0, f"put {k} with 2 replicas")
    first = {k: holders(k)[:1] for k in r2}
    x_ep = first[r2[0]][0] if first[r2[0]] else ""
    x = next((n for n, ep in store_ep.items() if ep == x_ep), None)
    if not check(x is not None, f"{r2[0]}'s first replica is on a store we run ({x_ep})"):
        return None, None
    y = "s2" if x == "s1" else "s1"
    only_x = only_y = None
    for i in range(24):
        k = f"r1-{i}"
        if put(k, rng.randrange(1 << 10, 1 << 20), 1).rc != 0:
            continue
        h = holders(k)
        if h == [store_ep[x]] and only_x is None:
            only_x = k
        elif h == [store_ep[y]] and only_y is None:
            only_y = k
        if only_x and only_y:
            break
    check(only_x and only_y, f"single-replica keys on each store ({only_x}, {only_y})")

    partition("c", x)
    print(f"-- client partitioned from {x} ({store_ep[x]}), transfer_timeout {TRANSFER_TIMEOUT_S}s")
    bound = TRANSFER_TIMEOUT_S + SLACK_S
    times = []
    for k in r2:
        good, o = get_ok(k)
        times.append(o.secs)
        check(good, f"get {k} reads the other replica ({o.secs:.2f}s, first replica on "
                    f"{'the partitioned store' if first[k] == [store_ep[x]] else 'the other'})")
        if first[k] == [store_ep[x]]:
            check(o.secs <= bound, f"failover of {k} within transfer_timeout + {SLACK_S}s slack "
                                   f"({o.secs:.2f}s <= {bound}s)")
    print(f"   gets under partition: max {max(times):.2f}s")
    if only_x:
        o = client(["get", only_x])
        check(o.rc == 4 and o.out == b"", f"get {only_x} (only replica unreachable) exits 4 with no "
                                          f"bytes in {o.secs:.2f}s <= {bound}s: {o.err.strip()[:160]}")
        check(o.secs <= bound, f"it failed within transfer_timeout + slack ({o.secs:.2f}s)")
    o = put("r2-during", 300000, 2)
    check(o.rc == 4, f"put with a replica on the unreachable store fails, exit 4, in {o.secs:.2f}s: "
                     f"{o.err.strip()[:160]}")
    check(o.secs <= bound, f"the put failed within transfer_timeout + slack ({o.secs:.2f}s <= {bound}s)")
    e = client(["exists", "r2-during"])
    check(e.rc == 1, f"the failed put left nothing readable (exists exit {e.rc})")
    heal("c")
    return x, (only_x, only_y)


def slow_link(node, rate):
    for where, dev in ((ns(node), "eth0"), (HUB, f"v{node}")):
        if rate:
            sh("ip", "netns", "exec", where, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
               "rate", rate, "burst", "64kb", "latency", "400ms")
        else:
            sh("ip", "netns", "exec", where, "tc", "qdisc", "del", "dev", dev, "root", ok=False)


def scenario_mid_transfer(x, store_ep):
    """(a) A store partitioned while a get is reading from it: the stalled
    connection times out after transfer_timeout and the get reads the other
    replica."""
    # Which store gets a put's first replica is the master's choice (and
    # steady: the same store for every put of a run), so the store to cut
    # off is the one holding the key's first replica.
    key = "big-0"
    o = put(key, 8 << 20, 2)
    first = holders(key)[:1] if o.rc == 0 else []
    node = {ep: n for n, ep in store_ep.items()}.get(first[0]) if first else None
    if not check(node is not None, f"an 8 MiB key with 2 replicas, its first on a known store "
                                   f"(exit {o.rc}, holders {first})"):
        return
    x = node
    slow_link(x, "20mbit")  # 8 MiB take ~3 s from x, so the partition lands mid-read
    t0 = time.monotonic()
    p = subprocess.Popen(["ip", "netns", "exec", ns("c"), BIN, "get"] + CLIENT_FLAGS + [key],
                         env=harness._child_env(ENV), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    harness._procs.append(p)
    time.sleep(1.0)
    still_reading = p.poll() is None
    partition("c", x)
    try:
        out, err = p.communicate(timeout=CMD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stop(p, signal.SIGKILL)
        out, err = b"", b"hung"
    secs = time.monotonic() - t0
    bound = 1.0 + TRANSFER_TIMEOUT_S + SLACK_S
    print(f"-- {x} partitioned 1s into an 8 MiB get from it: exit {p.returncode} after {secs:.2f}s")
    check(still_reading, "the get was still reading when the partition came")
    check(p.returncode == 0 and out == acked[key],
          f"the get read the other replica, byte for byte ({err.decode(errors='replace').strip()[:160]})")
    check(secs <= bound, f"within 1s + transfer_timeout + {SLACK_S}s slack ({secs:.2f}s <= {bound}s)")
    heal("c")
    slow_link(x, None)


def scenario_client_master():
    """(c) Client partitioned from the master."""
    partition("c", "m")
    bound = RPC_TIMEOUT_S * RPC_RETRIES
    o = client(["get", "r2-0"])
    print(f"-- client partitioned from the master: exit {o.rc} after {o.secs:.2f}s "
          f"(rpc_timeout {RPC_TIMEOUT_S}s x rpc_retries {RPC_RETRIES} = {bound}s)")
    check(o.rc == 4 and "master unavailable" in o.err,
          f"get exits 4 'master unavailable': {o.err.strip()[:200]}")
    check(o.secs <= bound + SLACK_S, f"within rpc_timeout x rpc_retries + {SLACK_S}s slack "
                                     f"({o.secs:.2f}s <= {bound + SLACK_S}s)")
    o = put("during-master-partition", 1000, 1)
    check(o.rc == 4 and "master unavailable" in o.err, f"put exits 4 too ({o.secs:.2f}s)")
    heal("c")


def scenario_store_master(x, store_ep, lone):
    """(b) Store x partitioned from the master, then healed."""
    y = "s2" if x == "s1" else "s1"
    stores = {"s1": s1, "s2": s2}
    partition(x, "m")
    t0 = time.monotonic()
    gone = wait_until(lambda: store_ep[x] not in "\n".join(segments()), CLIENT_TTL_S + 30, poll=0.1)
    dead_after = time.monotonic() - t0
    print(f"-- {x} partitioned from the master: declared dead after {dead_after:.2f}s "
          f"(client_ttl {CLIENT_TTL_S}s, pings every 1s)")
    check(gone, f"master unmounts {x}'s segment ({dead_after:.2f}s)")
    check(CLIENT_TTL_S - 1.5 <= dead_after <= CLIENT_TTL_S + SLACK_S,
          f"not before client_ttl - 1 ping and within client_ttl + slack ({dead_after:.2f}s)")
    landed = []
    for i in range(8):
        k = f"after-dead-{i}"
        if put(k, rng.randrange(1 << 10, 1 << 20), 1).rc == 0:
            landed += holders(k)
    check(len(landed) == 8 and all(ep == store_ep[y] for ep in landed),
          f"8 puts while {x} is dead all land on {y} ({sorted(set(landed))})")
    o = client(["put", "r2-while-dead", "-", "--replicas", "2"], input=b"x" * 1000)
    check(o.rc != 0 or holders("r2-while-dead") == [store_ep[y]],
          f"a 2-replica put while {x} is dead gets no replica on it (exit {o.rc})")
    only_x, only_y = lone
    if only_x:
        o = client(["get", only_x])
        check(o.rc == 3 and o.out == b"", f"{only_x}, whose only replica was on {x}, is gone "
                                          f"(exit {o.rc}), no stale bytes")
        acked.pop(only_x, None)  # dropped with the dead store, by design
    for k in ("r2-0", "r2-1", only_y):
        if k:
            good, o = get_ok(k)
            check(good, f"{k} still reads back exactly from {y}")

    heal(x)
    t0 = time.monotonic()
    back = wait_until(lambda: store_ep[x] in "\n".join(segments()), 30, poll=0.1)
    print(f"-- {x} healed: mounted again after {time.monotonic() - t0:.2f}s")
    check(back, f"{x} re-registers after the partition heals")
    segs = segments()
    check(sum(store_ep[x] in s for s in segs) == 1 and len(segs) == 2,
          f"each store's segment listed exactly once ({segs})")
    log = open(stores[x].log_path, errors="replace").read()
    check("mounted again" in log, f"{x}'s log says it mounted again under a new incarnation")
    check(stores[x].poll() is None, f"{x} kept running through the partition")
    placed = set()
    for i in range(4):
        k = f"after-heal-{i}"
        o = put(k, rng.randrange(1 << 10, 1 << 20), 2)
        check(o.rc == 0, f"put {k} with 2 replicas after the heal")
        placed.update(holders(k))
    check(store_ep[x] in placed, f"{x} receives allocations again")
    for k in [f"after-heal-{i}" for i in range(4)]:
        if k in acked:
            good, o = get_ok(k)
            check(good, f"{k} reads back exactly")
    if only_x:
        o = client(["get", only_x])
        check(o.rc == 3, f"{only_x} stays gone after {x} came back (exit {o.rc}): its old bytes "
                         "are never served")


def scenario_impaired(x):
    """(d) Loss, delay and a slow store; then verify every acknowledged key."""
    what = impair(x)
    print(f"-- impaired: {what}")
    wrong, hung, failed_puts = [], [], 0
    t0 = time.monotonic()
    keys = [f"lossy-{i}" for i in range(12)]
    for k in keys:
        o = put(k, rng.randrange(1, 2 << 20), 2)
        if o.rc is None:
            hung.append(k)
        elif o.rc != 0:
            failed_puts += 1
    reads = 0
    # Every key put under loss, and a sample of the earlier ones (all of them
    # are read once the links are clean again, below).
    earlier = sorted(k for k in acked if not k.startswith("lossy-"))
    sample = [k for k in keys if k in acked] + rng.sample(earlier, min(8, len(earlier)))
    for k in sample:
        o = client(["get", k])
        if o.rc is None:
            hung.append(k)
        elif o.rc == 0:
            reads += 1
            if o.out != acked[k]:
                wrong.append(k)
        elif o.out:
            wrong.append(k)  # bytes with a failure exit
    print(f"   {len(keys)} puts ({failed_puts} failed cleanly), {reads}/{len(sample)} gets exact, "
          f"{time.monotonic() - t0:.1f}s")
    check(not hung, f"no command hung under loss and delay ({hung})")
    check(not wrong, f"no get returned wrong bytes under loss and delay ({wrong})")
    unimpair()
    lost = []
    for k in sorted(acked):
        good, o = get_ok(k)
        if not good:
            lost.append((k, o.rc, o.err.strip()[:80]))
    check(not lost, f"all {len(acked)} acknowledged objects read back byte for byte ({lost[:3]})")


# ---- main ------------------------------------------------------------------

for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("nft", "nftables"), ("curl", "curl")):
    if shutil.which(tool) is None:
        skip(f"{tool} is not installed (scripts/setup.sh installs {package})")
probe = subprocess.run(["ip", "netns", "add", f"{PREFIX}-probe"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
if probe.returncode != 0:
    skip(f"ip netns is not permitted here: {probe.stderr.decode().strip()}")
sh("ip", "netns", "del", f"{PREFIX}-probe", ok=False)

# meson's timeout sends SIGTERM: leave through `finally`, which stops the
# processes and deletes the namespaces.
signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: cleaning up"))
s1 = s2 = master = None
try:
    build_network()
    master = start_in("m", ["master", "--rpc-address", ADDR["m"], "--port", str(RPC_PORT),
                            "--metrics-port", str(ADMIN_PORT), "--enable-http-metadata-server",
                            "--http-metadata-server-host", ADDR["m"],
                            "--http-metadata-server-port", str(META_PORT), "--data-dir", "none",
                            "--client-ttl", f"{CLIENT_TTL_S}s"], "master.log")
    if not wait_until(lambda: admin("/health").strip() == "ok", 20):
        raise RuntimeError("master did not come up: " + open(master.log_path).read()[-2000:])
    store_ep = {}
    for name in ("s1", "s2"):
        p = start_in(name, ["store", "--segment", "64mb", "--no-hugepages", "--no-prefault",
                            "--local-hostname", ADDR[name], "--port", str(DATA_PORT)] + STORE_RPC,
                     f"{name}.log")
        if name == "s1":
            s1 = p
        else:
            s2 = p
        store_ep[name] = f"{ADDR[name]}:{DATA_PORT}"
    if not wait_until(lambda: len(segments()) == 2, 30):
        raise RuntimeError(f"stores did not mount: {segments()}")
    # Not a check: the wait above raises when the stores do not mount.
    print(f"-- cluster up in namespaces {PREFIX}-*: master {ADDR['m']}, stores "
          f"{store_ep['s1']} {store_ep['s2']}, client {ADDR['c']}")

    x, lone = scenario_client_store(store_ep)
    if x:
        scenario_mid_transfer(x, store_ep)
    scenario_client_master()
    if x:
        scenario_store_master(x, store_ep, lone)
        scenario_impaired(x)
    for p, name in ((s1, "s1"), (s2, "s2"), (master, "master")):
        check(p.poll() is None, f"{name} is still running at the end")
finally:
    for p in (s1, s2, master):
        if p is not None:
            stop(p, signal.SIGTERM, timeout=10)
    remove_network()
left = LAN.leftovers()
check(not left, f"no namespace of this run is left ({left})")
finish()
