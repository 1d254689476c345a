"""Crash recovery of the durable master (issue 5, points 1-3).

Repeated kill -9 of the master at seeded random moments while several
client processes put, get and remove; after each restart the master reloads
its SQLite state and the stores re-attach with their memory. The checker:
every acknowledged put is readable and byte-identical, every acknowledged
remove stays removed, no two live buffers overlap, and the master's
allocated bytes equal the live objects' buffers (no space leaked by the puts
that were in flight at a crash). Then: a store restarted with a new
incarnation loses its objects instead of serving stale bytes; clients facing
a dead master fail with "master unavailable" and exit code 4; a damaged or
foreign state file makes the master refuse to start, naming the file.

    python3 tests/e2e/test_crash.py [--cycles N] [--seed S] [--fsync MODE]

--cycles (or MC_CRASH_CYCLES) sets the number of kill -9 cycles (default 3,
which keeps the test well under 3 minutes on 2 cores); --seed (or MC_SEED)
replays a run, whose seed the first line prints; --fsync (or
MC_CRASH_FSYNC) runs the master with that --fsync mode (always or
everysec; by default the master's own default). MOONCAKE_BIN names the
binary (meson test sets it).
"""
import argparse
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

from cluster import Cluster
from harness import check, finish, free_port, run, start, stop, tempdir, wait_until
from pool_checks import check_allocations, layout, metric

_args = argparse.ArgumentParser(description="kill -9 crash test of the durable master")
_args.add_argument("--cycles", type=int, default=int(os.environ.get("MC_CRASH_CYCLES") or 3),
                   help="kill -9 cycles (default: MC_CRASH_CYCLES or 3)")
_args.add_argument("--seed", type=int,
                   default=int(os.environ.get("MC_SEED") or random.randrange(1 << 30)),
                   help="replay the run with this seed (default: MC_SEED or random)")
_args.add_argument("--fsync", choices=["always", "everysec"],
                   default=os.environ.get("MC_CRASH_FSYNC") or None,
                   help="the master's --fsync (default: MC_CRASH_FSYNC or the master's default)")
_opts = _args.parse_args()
if _opts.cycles < 1:
    _args.error("--cycles: at least 1")
SEED = _opts.seed
CYCLES = _opts.cycles
WORKERS = 4
print(f"crash test: seed {SEED} (--seed to replay), {CYCLES} cycles (--cycles for more),"
      f" master --fsync {_opts.fsync or 'default'}")

EXIT_NOT_FOUND, EXIT_UNAVAILABLE = 3, 4


class Worker(threading.Thread):
    """One client at a time (a separate `mooncake` process per operation),
    on its own keys, so what it expects of a key is exactly what it did."""

    def __init__(self, n, env, stop_event):
        super().__init__(daemon=True)
        self.n, self.env, self.stop_event = n, env, stop_event
        self.rng = random.Random(SEED * 100 + n)
        self.acked = {}       # key -> bytes: put acknowledged, not removed since
        self.removed = set()  # acknowledged removes
        self.unknown = {}     # key -> bytes: put not acknowledged (may or may not exist)
        self.errors = []
        self.counts = {"put": 0, "get": 0, "rm": 0, "unavailable": 0}
        self.seq = 0

    def run(self):
        while not self.stop_event.is_set():
            op = self.rng.random()
            if op < 0.55 or not self.acked:
                self.put()
            elif op < 0.85:
                self.get()
            else:
                self.rm()

    def put(self):
        self.seq += 1
        key = f"w{self.n}/k{self.seq:05d}"
        value = self.rng.randbytes(self.rng.choice([100, 4096, 65536, 300000]))
        rc = run(["put", key, "-"], input=value, env=self.env).returncode
        self.counts["put"] += 1
        if rc == 0:
            self.acked[key] = value
        else:
            self.counts["unavailable"] += rc == EXIT_UNAVAILABLE
            self.unknown[key] = value

    def get(self):
        key = self.rng.choice(sorted(self.acked))
        r = run(["get", key], env=self.env)
        self.counts["get"] += 1
        if r.returncode == 0 and r.stdout != self.acked[key]:
            self.errors.append(f"get {key}: {len(r.stdout)} bytes differ from the acknowledged put")
        elif r.returncode not in (0, EXIT_UNAVAILABLE):
            self.errors.append(f"get {key} (acknowledged) exited {r.returncode}: "
                               f"{r.stderr.decode().strip()}")

    def rm(self):
        key = self.rng.choice(sorted(self.acked))
        rc = run(["rm", key], env=self.env).returncode
        self.counts["rm"] += 1
        if rc == 0:
            del self.acked[key]
            self.removed.add(key)
        elif rc == EXIT_NOT_FOUND:
            self.errors.append(f"rm {key} (acknowledged put) says not found")
        else:
            # The remove may or may not have happened: either outcome is fine.
            self.unknown[key] = self.acked.pop(key)


# The checker takes a missing acknowledged put for lost data, so the pool
# must never evict: each store gets room for the load's growth, about 8 MB
# of live objects a cycle. Evictions and the peak use are read from each
# master before it is killed, so a run that filled the pool says so.
SEGMENT_MB = 128 + 16 * max(0, CYCLES - 3)
pool = {"evicted": 0, "peak_used": 0.0}


def note_pool(c):
    evicted = metric(c, "master_evicted_key_count")
    allocated = metric(c, "master_allocated_bytes")
    capacity = metric(c, "master_total_capacity_bytes")
    pool["evicted"] += evicted or 0
    if allocated is not None and capacity:
        pool["peak_used"] = max(pool["peak_used"], allocated / capacity)


def crash_restart(c, rng):
    note_pool(c)
    os.kill(c.master.pid, signal.SIGKILL)
    c.master.wait()
    time.sleep(rng.uniform(0.0, 0.4))  # clients meet a dead master meanwhile
    c.start_master()


data_dir = tempdir("mooncake-crash-")
c = Cluster(stores=2, segment=f"{SEGMENT_MB}mb", data_dir=data_dir,
            extra_master=["--client-ttl", "5s"] + (["--fsync", _opts.fsync] if _opts.fsync else []),
            extra_store=[])
try:
    env = c.env
    rng = random.Random(SEED)
    stop_event = threading.Event()
    workers = [Worker(n, env, stop_event) for n in range(WORKERS)]
    for w in workers:
        w.start()
    for cycle in range(CYCLES):
        time.sleep(rng.uniform(0.3, 2.0))
        crash_restart(c, rng)
        print(f"cycle {cycle + 1}: master killed with SIGKILL and restarted")
    time.sleep(1.0)
    stop_event.set()
    for w in workers:
        w.join(timeout=120)
    counts = {k: sum(w.counts[k] for w in workers) for k in workers[0].counts}
    print(f"load: {counts}")
    check(all(not w.is_alive() for w in workers), "every client worker finished")
    errors = [e for w in workers for e in w.errors]
    check(not errors, "during the crashes no acknowledged put read wrong or went missing "
          + "; ".join(errors[:3]))
    acked = {k: v for w in workers for k, v in w.acked.items()}
    removed = set().union(*(w.removed for w in workers))
    unknown = {k: v for w in workers for k, v in w.unknown.items()}
    check(len(acked) > 0 and counts["rm"] > 0, f"the load acknowledged {len(acked)} puts "
          f"and {len(removed)} removes across {CYCLES} crashes")

    # One more crash right after the load, then the full check.
    crash_restart(c, rng)
    check(pool["evicted"] == 0,
          f"the pool never evicted (peak use {pool['peak_used']:.0%} of {2 * SEGMENT_MB} MB; "
          f"{pool['evicted']} evictions), so every missing acknowledged put below is lost data")
    bad = [k for k, v in acked.items() if (r := run(["get", k], env=env)).returncode != 0
           or r.stdout != v]
    check(not bad, f"after {CYCLES + 1} kill -9: all {len(acked)} acknowledged puts readable "
          f"and byte-identical " + " ".join(bad[:5]))
    back = [k for k in removed if run(["get", k], env=env).returncode != EXIT_NOT_FOUND]
    check(not back, f"all {len(removed)} acknowledged removes stay removed " + " ".join(back[:5]))
    wrong = [k for k, v in unknown.items()
             if (r := run(["get", k], env=env)).returncode == 0 and r.stdout != v]
    check(not wrong, f"of {len(unknown)} unacknowledged puts/removes, none reads wrong bytes")
    objects = check_allocations(c, "after the crashes")
    # Space freed by revoked puts is reusable: a fresh put lands and reads back.
    value = os.urandom(200000)
    check(run(["put", "after/crash", "-"], input=value, env=env).returncode == 0 and
          run(["get", "after/crash"], env=env).stdout == value, "a put after recovery works")
    # The journal's figures on /metrics, counted since the last restart.
    commits = metric(c, "master_journal_commits_total")
    changes = metric(c, "master_journal_changes_total")
    check(commits is not None and changes is not None and 1 <= commits <= changes,
          f"/metrics counts the journal's commits ({commits}) and changes ({changes})")
    # A remove is fdatasynced before its reply in either --fsync mode.
    check(run(["put", "after/sync", "-"], input=b"x" * 1000, env=env).returncode == 0 and
          run(["rm", "after/sync"], env=env).returncode == 0, "a put and a remove after recovery")
    commits = metric(c, "master_journal_commits_total")
    syncs = metric(c, "master_journal_syncs_total")
    check(syncs is not None and syncs >= 1 and
          (syncs == commits if _opts.fsync == "always" else syncs <= commits),
          f"/metrics counts the journal's fdatasyncs ({syncs} for {commits} commits,"
          f" --fsync {_opts.fsync or 'default'})")
    promtool = shutil.which("promtool")
    if check(promtool is not None, "promtool is installed"):
        status, body = c.admin("/metrics")
        p = subprocess.run([promtool, "check", "metrics"], input=body,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        check(status == 200 and p.returncode == 0,
              "promtool check metrics passes with the journal's: " + p.stdout.decode().strip()[:300])

    # A store whose process restarted (new incarnation, same endpoint) loses
    # its old objects instead of serving stale bytes.
    store0 = c.stores[0]
    log = open(store0.log_path).read()
    port = re.search(r"data port (\d+)", log).group(1)
    name = f"{[s for s in c.segments() if s.endswith(':' + port)][0]}"
    on0 = {k for k, bufs in layout(c).items() if any(seg == name for seg, _, _ in bufs)}
    os.kill(c.master.pid, signal.SIGKILL)
    c.master.wait()
    os.kill(store0.pid, signal.SIGKILL)
    store0.wait()
    c.start_master()
    # Not Cluster.add_store: the segment count does not grow, the new
    # incarnation replaces the loaded one under the same name.
    c.stores[0] = start(["store", "--segment", c.segment, "--port", port], env=env,
                        log_name=os.path.join(c.logdir, "store-0-reborn.log"))
    wait_until(lambda: all(run(["get", k], env=env).returncode == EXIT_NOT_FOUND
                           for k in sorted(on0)[:3]), 20, poll=0.2)
    stale = [k for k in on0 if run(["get", k], env=env).returncode != EXIT_NOT_FOUND]
    check(len(on0) > 0 and not stale,
          f"the {len(on0)} objects on the restarted store (new incarnation) are dropped "
          + " ".join(stale[:5]))
    kept = [k for k, v in acked.items() if k not in on0 and k in objects]
    bad = [k for k in kept if run(["get", k], env=env).stdout != acked[k]]
    check(not bad, f"the {len(kept)} objects on the other store stay readable and identical")
    check_allocations(c, "after the store restart")

    # Clients facing a dead master retry, then give up with exit code 4.
    final = os.urandom(100000)
    check(run(["put", "final/key", "-"], input=final, env=env).returncode == 0,
          "a put after the store restart works")
    os.kill(c.master.pid, signal.SIGKILL)
    c.master.wait()
    t0 = time.monotonic()
    r = run(["get", "final/key"], env=env)
    err = r.stderr.decode()
    check(r.returncode == EXIT_UNAVAILABLE and "master unavailable" in err,
          f"a get with the master down exits {r.returncode} (want 4) saying "
          f"'master unavailable' after {time.monotonic() - t0:.1f} s: {err.strip()[:160]}")
    # The stores keep running and re-attach when it comes back.
    c.start_master()
    r = run(["get", "final/key"], env=env)
    check(r.returncode == 0 and r.stdout == final,
          "with the master back, its state and the stores' memory serve reads again "
          + r.stderr.decode().strip()[:160])
    check(all(s.poll() is None for s in c.stores), "the stores survived every master crash")

    # A state file of schema version 1 (objects keyed by key, no row id), as
    # an older mooncake left it: the master upgrades it in place at start and
    # serves the same objects.
    before = layout(c)
    os.kill(c.master.pid, signal.SIGKILL)
    c.master.wait()
    db = sqlite3.connect(os.path.join(data_dir, "master.db"))
    db.executescript(
        "BEGIN;"
        "CREATE TABLE objects_v1 (key BLOB PRIMARY KEY, size_bytes INTEGER NOT NULL,"
        " soft_pin INTEGER NOT NULL, replicas INTEGER NOT NULL, buffers BLOB NOT NULL,"
        " row_check INTEGER NOT NULL) WITHOUT ROWID;"
        "INSERT INTO objects_v1 SELECT key, size_bytes, soft_pin, replicas, buffers, row_check"
        " FROM objects;"
        "DROP TABLE objects; ALTER TABLE objects_v1 RENAME TO objects;"
        "DROP TABLE IF EXISTS disk_replicas;"  # version 3's
        "PRAGMA user_version = 1; COMMIT;")
    db.close()
    c.start_master()
    upgraded = "upgraded the mooncake master state schema from version 1 to 4" in \
        open(c.master_log).read()
    check(upgraded and layout(c) == before,
          f"a version 1 state file is upgraded at start and loads the same {len(before)} objects")
    bad = [k for k in kept + ["final/key"]
           if run(["get", k], env=env).stdout != acked.get(k, final)]
    check(not bad, f"after the upgrade the {len(kept) + 1} objects read back identical "
          + " ".join(bad[:5]))
finally:
    # The master first: stores stopping cleanly unmount their segments, which
    # (rightly) removes their objects from the state.
    stop(c.master)
    c.stop()

# The state file holds the stores' access keys: owner-only, and so are the
# WAL files SQLite made beside it.
for name in sorted(os.listdir(data_dir)):
    mode = os.stat(os.path.join(data_dir, name)).st_mode & 0o777
    check(mode & 0o077 == 0, f"{name} is owner-only (mode {mode:o})")

# A state file damaged in place (a byte of a stored key flipped, wherever the
# key's bytes sit in the file): the master refuses to start rather than load it.
db_path = os.path.join(data_dir, "master.db")
data = bytearray(open(db_path, "rb").read())
victim = b"final/key"  # live at the end: its row is in the table, not a free page
hits = [m.start() for m in re.finditer(re.escape(victim), bytes(data))]
for at in hits:
    data[at + len(victim) - 1] ^= 0x01
open(db_path, "wb").write(bytes(data))
r = run(["master", "--data-dir", data_dir, "--port", str(free_port()),
         "--metrics-port", str(free_port()), "--rpc-address", "127.0.0.1"], timeout=30)
err = r.stderr.decode()
check(len(hits) > 0 and r.returncode == 1 and db_path in err and "refusing to start" in err,
      f"a master.db with a damaged row ({len(hits)} copies of key {victim.decode()} flipped): "
      f"the master refuses to start naming it: {err.strip()[:200]}")

# A damaged or foreign state file: refuse to start, naming the file.
for what, make in [
        ("damaged", lambda p: open(p, "wb").write(b"SQLite format 3\0" + os.urandom(8000))),
        ("random bytes", lambda p: open(p, "wb").write(os.urandom(8192))),
        ("foreign", lambda p: sqlite3.connect(p).executescript(
            "CREATE TABLE kv(key BLOB PRIMARY KEY, value BLOB); PRAGMA user_version = 1;"))]:
    d = tempdir("mooncake-baddb-")
    path = os.path.join(d, "master.db")
    make(path)
    r = run(["master", "--data-dir", d, "--port", str(free_port()),
             "--metrics-port", str(free_port()), "--rpc-address", "127.0.0.1"], timeout=30)
    err = r.stderr.decode()
    check(r.returncode == 1 and path in err and "refusing to start" in err,
          f"a {what} master.db: the master refuses to start naming it: {err.strip()[:200]}")
finish()
