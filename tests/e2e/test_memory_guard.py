"""The memory guard (issue 22, point 5): a store asked for more memory than
its cgroup or the host can give is refused at start, exit 2, with a message
naming the request, what is available and the huge pages situation, instead
of being OOM-killed while it faults the segment in; a segment that fits in
the same cgroup starts as before. The cgroup is one this test makes under its
own memory cgroup (v2 or v1) and removes after."""
import os
import re
import subprocess
import sys

import harness
from cluster import Cluster
from harness import BIN, check, finish, run, stop, tempdir, wait_until

LIMIT_BYTES = 2 << 30


def own_memory_cgroup():
    """(directory, v2) of this process's memory cgroup, or None."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controllers == "":
                for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    d = mount + path.rstrip("/")
                    ctl = os.path.join(d, "cgroup.subtree_control")
                    if os.path.exists(ctl) and "memory" in open(ctl).read().split():
                        return d, True
            elif "memory" in controllers.split(","):
                d = "/sys/fs/cgroup/memory" + path.rstrip("/")
                if os.path.isdir(d):
                    return d, False
    return None


def make_child(parent, v2):
    d = os.path.join(parent, f"mooncake-e2e-{os.getpid()}")
    os.mkdir(d)
    with open(os.path.join(d, "memory.max" if v2 else "memory.limit_in_bytes"), "w") as f:
        f.write(str(LIMIT_BYTES))
    return d


def in_cgroup(cg, args):
    """argv running `mooncake ARGS` inside cgroup `cg`."""
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cg, BIN] + args


# Without any cgroup: more than the host has is refused, naming MemAvailable.
total = 0
with open("/proc/meminfo") as f:
    for line in f:
        if line.startswith("MemTotal:"):
            total = int(line.split()[1]) * 1024
huge = f"{2 * total // (1 << 30) + 1}gb"
r = run(["store", "--segment", huge, "--master", "127.0.0.1:1"], timeout=30)
err = r.stderr.decode()
check(r.returncode == 2, f"store --segment {huge} on a host with {total >> 30} GiB exits 2 ({r.returncode})")
check("does not fit in memory" in err and "MemAvailable" in err and "huge pages" in err,
      f"and names the request, the host's available memory and huge pages: {err.strip()}")

found = own_memory_cgroup() if os.geteuid() == 0 else None
cg = None
if found:
    try:
        cg = make_child(*found)
    except OSError as e:
        print(f"cannot make a memory cgroup under {found[0]}: {e}")
if cg is None:
    print("SKIP: no writable memory cgroup here (needs root and a memory controller); "
          "the cgroup half of the guard was not tested")
    finish() if harness._failures else sys.exit(77)

logs = tempdir("mc-memguard-")
c = Cluster(stores=0, logdir=logs)
try:
    # 4 GB in a 2 GiB cgroup: refused at start, exit 2, before anything mounts.
    p = subprocess.run(in_cgroup(cg, ["store", "--segment", "4gb", "--no-hugepages"]),
                       env=harness._child_env(c.env), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode()
    check(p.returncode == 2, f"store --segment 4gb in a 2 GiB cgroup exits 2 ({p.returncode})")
    # 4.0x GB: the segment file also holds its write epochs (write_epochs.h).
    check(re.search(r"a segment of 4\.0\d GB does not fit", err) and "= 2.00 GB" in err,
          f"and names the request and the cgroup's limit: {err.strip()}")
    check("huge pages:" in err, "and says how many huge pages are free")
    check(not c.segments(), "nothing was mounted")

    # 1 GB fits in the same cgroup: the store starts and mounts as before.
    log = os.path.join(logs, "store-fits.log")
    with open(log, "wb") as out:
        fits = subprocess.Popen(in_cgroup(cg, ["store", "--segment", "1gb", "--no-hugepages"]),
                                env=harness._child_env(c.env), stdout=out,
                                stderr=subprocess.STDOUT)
    harness._procs.append(fits)
    mounted = wait_until(lambda: c.segments() or fits.poll() is not None, 30)
    check(fits.poll() is None and c.segments(),
          f"store --segment 1gb in the same cgroup starts and mounts: {open(log).read()[-300:]}")
    prefaulted = wait_until(lambda: "segment prefaulted" in open(log).read() or
                            fits.poll() is not None, 60)
    check(fits.poll() is None, "and stays up after faulting its whole segment in")
    check(stop(fits) == 0, "and exits 0 on SIGTERM")
finally:
    c.stop()
    try:
        os.rmdir(cg)
    except OSError as e:
        check(False, f"remove the test's cgroup {cg}: {e}")
finish()
