"""The HA leader cut from etcd but not from its clients (issue 32, point 6).

The test builds its own network: a hub namespace with a bridge and one
namespace each for etcd, two masters, a store and a client, joined by veth
pairs on 10.78.0.0/24 (which exists only inside these namespaces). Master m0
leads; then an nftables drop in m0's namespace cuts it from etcd while the
client still reaches it. Shown:
 (a) m0 stops acknowledging within its lease (plus the time one command
     takes), and exits 75;
 (b) m1 takes over, and no put m0 acknowledged ended after m1's first one
     began: the old leader's last acknowledgement precedes the new one's;
 (c) writers that keep putting through m0 while it is cut off (their data
     lands on the store under m0's grants) do not spoil m1's objects: every
     acknowledged put reads back byte for byte and no two live objects share
     bytes, once the partition has healed.
Every process is stopped by its pid and every namespace deleted in
`finally`; names carry this run's pid. Exits 77 (skipped) where network
namespaces or nft are not available. Bounded: well under 60 s.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

import harness
import netns
from harness import BIN, check, finish, stop, tempdir, wait_until
from ha_cluster import ETCD
from pool_checks import check_allocations

SEED = int(os.environ.get("MC_SEED", random.randrange(1 << 30)))
print(f"seed {SEED} (MC_SEED={SEED} replays)")
rng = random.Random(SEED)

PREFIX = f"mchp{os.getpid() % 100000}"
NET = "10.78.0"
ADDR = {"e": f"{NET}.1", "m0": f"{NET}.2", "m1": f"{NET}.3", "s": f"{NET}.4", "c": f"{NET}.5"}
NODES = list(ADDR)
ETCD_PORT, ETCD_PEER, RPC_PORT, ADMIN_PORT = 2379, 2380, 50051, 9003
TTL_S = 2
SLACK_S = 3          # one client command's start and RPC on a loaded machine
CMD_TIMEOUT_S = 30
ETCD_URL = f"http://{ADDR['e']}:{ETCD_PORT}"
CLUSTER = "ha-partition"
ENV = {"MOONCAKE_MASTER": f"etcd://{ADDR['e']}:{ETCD_PORT}", "MC_STORE_CLUSTER_ID": CLUSTER,
       "MOONCAKE_TE_META_DATA_SERVER": f"etcd://{ADDR['e']}:{ETCD_PORT}"}
PINNED = dict(ENV, MOONCAKE_MASTER=f"{ADDR['m0']}:{RPC_PORT}")
logdir = tempdir("mooncake-ha-partition-")
LAN = netns.Network(PREFIX, ADDR)
ns = LAN.ns
sh = netns.sh


def skip(why):
    print(f"SKIP: {why}")
    shutil.rmtree(logdir, ignore_errors=True)
    sys.exit(77)


def build_network():
    LAN.build({"m0": "table inet mchp {\n chain cut_in { type filter hook input priority 0; }\n"
                     " chain cut_out { type filter hook output priority 0; }\n}\n"})


def start_in(node, args, name, binary=BIN, env=None):
    return LAN.start_in(node, [binary] + args, os.path.join(logdir, name), env or ENV)


def in_client(args, env=ENV, input=None):
    """One mooncake command in the client's namespace: (rc, stdout, start, end)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(["ip", "netns", "exec", ns("c"), BIN] + args, input=input,
                           env=harness._child_env(env), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=CMD_TIMEOUT_S)
        return p.returncode, p.stdout, t0, time.monotonic()
    except subprocess.TimeoutExpired:
        return None, b"", t0, time.monotonic()


def admin(master, path):
    p = sh("ip", "netns", "exec", ns("c"), "curl", "-s", "-m", "2",
           f"http://{ADDR[master]}:{ADMIN_PORT}{path}", ok=False)
    return p.stdout.decode() if p.returncode == 0 else ""


def start_master(node):
    return start_in(node, ["master", "--ha-etcd", ETCD_URL, "--ha-cluster", CLUSTER,
                           "--ha-lease-ttl", str(TTL_S), "--port", str(RPC_PORT),
                           "--metrics-port", str(ADMIN_PORT), "--rpc-address", ADDR[node],
                           "--data-dir", "none"], f"master-{node}.log")


if os.geteuid() != 0:
    skip("needs root for network namespaces")
if shutil.which("nft") is None or shutil.which("curl") is None or not os.path.exists(ETCD):
    skip("needs nft, curl and etcd")
try:
    build_network()
except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
    LAN.remove()
    skip(f"network namespaces unavailable: {e}")

procs = []
acked = {}            # key -> value, every put acknowledged by anyone
m0_acks = []          # (start, end) of puts m0 acknowledged
stop_writers = threading.Event()
lock = threading.Lock()


def writer(n):
    """Puts through m0 alone (a client that never heard of the failover)."""
    i = 0
    while not stop_writers.is_set():
        key, value = f"w{n}-{i}", os.urandom(rng.randrange(1, 48 << 10))
        rc, _, t0, t1 = in_client(["put", key, "-", "--rpc-timeout", "1s", "--rpc-retries", "1"],
                                  env=PINNED, input=value)
        if rc == 0:
            with lock:
                acked[key] = value
                m0_acks.append((t0, t1))
        i += 1


try:
    procs.append(start_in("e", [
        "--name", "e0", "--data-dir", os.path.join(logdir, "e0.etcd"),
        "--listen-client-urls", ETCD_URL, "--advertise-client-urls", ETCD_URL,
        "--listen-peer-urls", f"http://{ADDR['e']}:{ETCD_PEER}",
        "--initial-advertise-peer-urls", f"http://{ADDR['e']}:{ETCD_PEER}",
        "--initial-cluster", f"e0=http://{ADDR['e']}:{ETCD_PEER}",
        "--heartbeat-interval", "50", "--election-timeout", "500"], "etcd.log", binary=ETCD))
    m0 = start_master("m0")
    procs.append(m0)
    check(wait_until(lambda: admin("m0", "/role") == "leader", 20), "m0 leads")
    m1 = start_master("m1")
    procs.append(m1)
    check(wait_until(lambda: admin("m1", "/role") == "standby", 20), "m1 is a standby")
    procs.append(start_in("s", ["store", "--segment", "32mb", "--no-hugepages", "--no-prefault",
                                "--local-hostname", ADDR["s"]], "store.log"))
    check(wait_until(lambda: admin("m0", "/get_all_segments").strip() != "", 20),
          "the store mounted on m0 through etcd://")
    for i in range(5):
        value = os.urandom(rng.randrange(1, 48 << 10))
        rc, _, _, _ = in_client(["put", f"pre{i}", "-"], input=value)
        check(rc == 0, f"put pre{i} before the partition")
        acked[f"pre{i}"] = value

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for w in writers:
        w.start()
    check(wait_until(lambda: len(m0_acks) >= 2, 20), "writers pinned to m0 get acknowledgements")
    cut = time.monotonic()
    for chain, field in (("cut_in", "saddr"), ("cut_out", "daddr")):
        sh("ip", "netns", "exec", ns("m0"), "nft", "add", "rule", "inet", "mchp", chain,
           "ip", field, ADDR["e"], "drop")
    print(f"m0 cut from etcd at +0 s (lease {TTL_S} s); the client still reaches it")

    # The first put m1 acknowledges, through etcd://.
    first_new = None
    deadline = time.monotonic() + 30
    n = 0
    while first_new is None and time.monotonic() < deadline:
        value = os.urandom(1000 + n)
        rc, _, t0, t1 = in_client(["put", f"new{n}", "-"], input=value)
        if rc == 0:
            acked[f"new{n}"] = value
            first_new = (t0, t1)
        n += 1
    check(first_new is not None, "m1 acknowledges a put after the partition")
    code = m0.wait(timeout=30)
    stop_writers.set()
    for w in writers:
        w.join(timeout=CMD_TIMEOUT_S + 5)
    check(code == 75, f"the cut-off leader m0 exits 75: exit {code}")
    last_m0 = max(t1 for _, t1 in m0_acks)
    print(f"m0's last acknowledgement ended at +{last_m0 - cut:.2f} s; m1's first began at "
          f"+{first_new[0] - cut:.2f} s and ended at +{first_new[1] - cut:.2f} s")
    check(last_m0 - cut <= TTL_S + SLACK_S,
          f"m0 stopped acknowledging within its lease: last ack {last_m0 - cut:.2f} s after the cut")
    check(last_m0 < first_new[1], "no put m0 acknowledged ended after m1 had acknowledged one")
    check(admin("m1", "/role") == "leader", "m1 leads")

    for i in range(5):
        value = os.urandom(rng.randrange(1, 48 << 10))
        rc, _, _, _ = in_client(["put", f"post{i}", "-"], input=value)
        check(rc == 0, f"put post{i} on m1")
        acked[f"post{i}"] = value
    bad = [k for k, v in acked.items() if in_client(["get", k])[:2] != (0, v)]
    check(not bad, f"all {len(acked)} acknowledged puts read back byte for byte (bad: {bad[:5]})")

    class Admin:
        def admin(self, path):
            body = admin("m1", path)
            return (200 if body else 0), body.encode()
    check_allocations(Admin(), "after the partition")
finally:
    stop_writers.set()
    for p in procs:
        stop(p)
    LAN.remove()
finish()
