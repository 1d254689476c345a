"""The disk tier's faults on real file systems (issue 31, point 3):

1. A full disk: the tier sits on a small file system this test mounts (a
   loop-mounted ext4 image, else a tmpfs; both in a private mount namespace,
   so nothing outlives the test). The file system runs out long before the
   tier's --ssd-size: ENOSPC fails the offloads, which the store and the
   master log as WARN and count (mooncake_tier_io_errors_total); no put
   fails, no unfinished file is left, and every get returns the right bytes
   or nothing.
2. kill -9 inside an object write: the store's test-only crash point
   (MOONCAKE_TEST_TIER_PAUSE_MID_WRITE) stops the first offload after part of
   its data is on the temporary file and signals by a file; the store is
   killed there. Restarted on the same path it deletes the temporary file,
   and no key reads a partial object or wrong bytes.

Exit 77 (skipped) with a message when no mount namespace or mount is
possible (not root, no CAP_SYS_ADMIN)."""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys

NS_MARK = "MC_SSD_FAULTS_IN_NS"
if os.environ.get(NS_MARK) != "1":
    # Re-run in a private mount namespace: the mounts die with it.
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if probe.returncode != 0:
        print("SKIP: no private mount namespace here (unshare -m: "
              f"{probe.stderr.decode().strip()}); the full-disk test needs a mount")
        sys.exit(77)
    os.environ[NS_MARK] = "1"
    os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable]
              + sys.argv)

from cluster import Cluster  # noqa: E402
from harness import check, finish, run, start, stop, tempdir, wait_until  # noqa: E402

MB = 1 << 20
MASTER = ["--enable-offload", "--eviction-high-watermark-ratio", "0.5"]


def sh(*cmd):
    return subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def mount_small_fs(where, size_mb):
    """A small file system at `where`: ext4 on a loop device, else tmpfs."""
    image = where + ".img"
    if shutil.which("mkfs.ext4"):
        with open(image, "wb") as f:
            f.truncate(size_mb * MB)
        if sh("mkfs.ext4", "-q", "-F", "-m", "0", image).returncode == 0 and \
                sh("mount", "-o", "loop", image, where).returncode == 0:
            os.unlink(image)  # the loop device holds it until the unmount
            return "ext4 on a loop device"
        os.unlink(image)
    r = sh("mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", where)
    if r.returncode == 0:
        return "tmpfs"
    print(f"SKIP: cannot mount a small file system here ({r.stdout.decode().strip()})")
    sys.exit(77)


def payload(key, n):
    seed = key.encode() * (4096 // len(key) + 1)
    block = bytes((b * 7 + i) % 251 for i, b in enumerate(seed[:4096]))
    return block * (n // 4096) + block[: n % 4096]


def metric(c, name):
    status, body = c.admin("/metrics")
    m = re.search(rf"^{name} (\d+)$", body.decode(), re.M)
    return int(m.group(1)) if m else -1


def put(c, key, n):
    r = run(["put", key, "-"], input=payload(key, n), env=c.env)
    return r.returncode == 0


def wrong_reads(c, sizes):
    """Keys whose get returned bytes other than their own."""
    wrong = []
    for key, n in sizes.items():
        g = run(["get", key], env=c.env, timeout=30)
        if g.returncode == 0 and g.stdout != payload(key, n):
            wrong.append(key)
    return wrong


def store_args(path, size):
    return ["--ssd-offload-path", path, "--ssd-size", size, "--no-hugepages", "--no-prefault"]


# ---- 1. A full disk ----
mnt = tempdir("mc-ssd-full-")
kind = mount_small_fs(mnt, 8)
print(f"the tier's file system: {kind}, 8 MB at {mnt}", flush=True)
c = Cluster(stores=0, segment="24mb", extra_master=MASTER)
try:
    store = c.add_store(extra=store_args(os.path.join(mnt, "tier"), "256mb"))
    wait_until(lambda: "announced" in open(store.log_path).read(), 15)
    sizes = {f"full-{i:02d}": MB + 4096 * i + 100 for i in range(30)}
    failed = [k for k, n in sizes.items() if not put(c, k, n)]
    check(not failed, f"every put succeeds while the disk fills ({failed})")
    check(wait_until(lambda: metric(c, "mooncake_tier_io_errors_total") > 0, 20),
          f"ENOSPC is counted: mooncake_tier_io_errors_total "
          f"{metric(c, 'mooncake_tier_io_errors_total')}, offloads "
          f"{metric(c, 'mooncake_tier_offloads_total')}")
    check(metric(c, "mooncake_tier_offloads_total") > 0, "offloads went through until it filled")
    master_log = open(c.master_log).read()
    check(re.search(r"WARN .*offload of .* failed .*No space left on device", master_log),
          "the master logs the failed offload as a WARN naming ENOSPC")
    check(re.search(r"WARN .*No space left on device.*this object is not on disk",
                    open(store.log_path).read()),
          "the store logs a WARN naming ENOSPC")
    more = {f"after-{i}": MB + 7 for i in range(6)}
    failed = [k for k, n in more.items() if not put(c, k, n)]
    check(not failed, f"puts after the disk is full still succeed ({failed})")
    sizes.update(more)
    # The last puts' offloads may still be writing (or failing) when they
    # return: what counts is that none is left once they are done.
    temps = lambda: glob.glob(os.path.join(mnt, "tier", "objects", "*.tmp"))  # noqa: E731
    check(wait_until(lambda: not temps(), 20),
          f"no unfinished file is left on the full disk ({temps()})")
    check(not wrong_reads(c, sizes), "every get returns the right bytes or nothing")
    newest = list(more)[-3:]  # the older ones may have been picked for offload and dropped
    fresh = [k for k in newest if run(["get", k], env=c.env).stdout == payload(k, more[k])]
    check(fresh == newest, f"the newest objects are served from memory ({fresh})")
finally:
    c.stop()
sh("umount", mnt)

# ---- 2. kill -9 inside an object write ----
ssd = tempdir("mc-ssd-kill-")
signal_file = os.path.join(tempdir("mc-ssd-signal-"), "paused")
c = Cluster(stores=0, segment="16mb", extra_master=MASTER)
try:
    n_before = len(c.segments())
    log = os.path.join(c.logdir, "store-paused.log")
    paused = start(["store", "--segment", "16mb"] + store_args(ssd, "64mb"),
                   env={**c.env, "MOONCAKE_TEST_TIER_PAUSE_MID_WRITE": signal_file}, log_name=log)
    check(wait_until(lambda: len(c.segments()) > n_before, 20), "the store mounts")
    # 3 MiB objects: three 1 MiB chunks, so the pause after the first is
    # inside the object's data.
    sizes = {f"kill-{i}": 3 * MB + 12345 for i in range(4)}
    check(all(put(c, k, n) for k, n in sizes.items()), "puts past the watermark")
    check(wait_until(lambda: os.path.exists(signal_file), 20),
          "an offload stopped at the crash point inside its write")
    temps = glob.glob(os.path.join(ssd, "objects", "*.tmp"))
    check(len(temps) == 1 and 0 < os.path.getsize(temps[0]),
          f"the partial object is on disk under its temporary name ({temps})")
    check(not glob.glob(os.path.join(ssd, "objects", "*.mco")), "no object file is complete")
    os.kill(paused.pid, signal.SIGKILL)
    paused.wait()
    store = c.add_store(extra=store_args(ssd, "64mb"))
    check(wait_until(lambda: "announced" in open(store.log_path).read(), 20),
          "the restarted store announces its disk tier")
    check("1 unfinished or torn files deleted" in open(store.log_path).read(),
          "the restart deletes the unfinished file")
    check(not glob.glob(os.path.join(ssd, "objects", "*.tmp")), "no .tmp is left")
    check(not glob.glob(os.path.join(ssd, "objects", "*.mco")), "nothing partial was adopted")
    check(not wrong_reads(c, sizes), "no key reads a partial object or wrong bytes")
    on_disk = [k for k in sizes if b'"tier":"disk"' in c.admin(f"/query_key?key={k}")[1]]
    check(not on_disk, f"no key is recorded on disk ({on_disk})")
    check(put(c, "after-restart", 3 * MB) and
          run(["get", "after-restart"], env=c.env).stdout == payload("after-restart", 3 * MB),
          "the restarted store takes and serves new objects")
finally:
    c.stop()
finish()
