#!/usr/bin/env python3
"""The reference's own Python tests of mooncake.store, run against us.

"Drop-in" includes the reference Mooncake Store's tests of its Python API
(mooncake-wheel/tests/) running unchanged against our module. This runs
them as the reference's scripts/run_tests.sh does: a master alone with a
500 ms lease (DEFAULT_KV_LEASE_TTL=500), the dummy-client tests beside a
standalone client on port 50052, the two multi-dummy processes at once, and
the disk-tier tests against a master with the disk tier on and the
client's path in MOONCAKE_OFFLOAD_FILE_STORAGE_PATH. Every process is ours,
on loopback, on free ports (the standalone client's 50052 is the one the
tests name), stopped by pid at the end.

  scripts/reference_pytests.py --ref DIR [--bin build/src/cli/mooncake]
      [--pythonpath build/src/python] [FILE ...]

DIR is a checkout of github.com/kvcache-ai/Mooncake (its tests are not
copied here). Prints each file's pytest summary and the failing tests, then
the totals; the known differences are listed in mooncake-python(3)
(DIFFERENCES FROM THE REFERENCE). Exit status 1 if any file failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

import harness  # noqa: E402

# File -> which set-up it needs, in run_tests.sh's order; the tests that
# need a GPU, RDMA, SPDK or modules we do not ship are left out.
PLAIN = ["test_distributed_object_store.py", "test_replicated_distributed_object_store.py",
         "test_safetensor_functions.py", "test_batch_replica_clear.py"]
DUMMY = ["test_dummy_client.py", "test_multi_dummy_clients.py"]
TIER = ["test_offload_on_eviction.py", "test_ssd_offload_in_evict.py",
        "test_promotion_on_hit.py"]
TIER_MASTER = ["--enable-offload", "--offload-on-evict", "--promotion-on-hit",
               "--promotion-admission-threshold", "1"]

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--ref", required=True, help="a checkout of kvcache-ai/Mooncake")
ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "src", "cli", "mooncake"))
ap.add_argument("--pythonpath", default=os.path.join(HERE, "..", "build", "src", "python"))
ap.add_argument("files", nargs="*", help="test files to run (default: all of the lists above)")
args = ap.parse_args()
harness.BIN = os.path.abspath(args.bin)
from cluster import Cluster  # noqa: E402  (after BIN is set)

tests_dir = os.path.join(args.ref, "mooncake-wheel", "tests")
wanted = args.files or PLAIN + DUMMY + TIER
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
totals = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
bad_files = []


def env_for(c, extra=None):
    e = dict(os.environ, PYTHONPATH=os.path.abspath(args.pythonpath), PROTOCOL="tcp",
             DEVICE_NAME="", DEFAULT_KV_LEASE_TTL="500", MASTER_SERVER=f"127.0.0.1:{c.rpc_port}",
             MC_METADATA_SERVER=f"http://127.0.0.1:{c.meta_port}/metadata")
    e.pop("LOCAL_HOSTNAME", None)
    e.update(extra or {})
    return e


def tally(name, out, err=""):
    # pytest's last line, e.g. "1 failed, 15 passed in 8.13s" (the log lines
    # of our own processes go to stderr, which is not searched).
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed|errors?|skipped)[^\n]*? in [\d.]+s)",
                         out, re.M)
    line = summary[-1] if summary else "no summary (see the output)"
    for n, what in re.findall(r"(\d+) (passed|failed|errors?|skipped)", line):
        totals["errors" if what.startswith("error") else what] += int(n)
    failing = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    print(f"{name}: {line}")
    for f in failing:
        print(f"    {f}")
    if failing or not summary:
        bad_files.append(name)
    if not summary:
        print((out + err)[-2000:])


def pytest(c, name, extra_env=None):
    r = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
                       cwd=tests_dir, env=env_for(c, extra_env), capture_output=True, text=True,
                       timeout=900)
    tally(name, r.stdout, r.stderr)


def multi_dummy(c):
    name = "test_multi_dummy_clients.py"
    procs = [subprocess.Popen([python, name, "--client-id", cid], cwd=tests_dir, env=env_for(c),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for cid in ("client1", "client2")]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    ok = all(p.returncode == 0 for p in procs)
    totals["passed" if ok else "failed"] += 2
    print(f"{name} (client1 and client2 at once): {'2 passed' if ok else 'FAILED'}")
    if not ok:
        bad_files.append(name)
        for o in outs:
            print(o[-1500:])


c = Cluster(stores=0, extra_master=["--default-kv-lease-ttl", "500"])
try:
    for name in (f for f in PLAIN if f in wanted):
        pytest(c, name)
    if any(f in wanted for f in DUMMY):
        client = harness.start(["client", "--master", f"127.0.0.1:{c.rpc_port}",
                                "--metadata-server", f"http://127.0.0.1:{c.meta_port}/metadata",
                                "--port", "50052", "--segment", "3200mb"], env=c.env,
                               log_name=os.path.join(c.logdir, "client.log"))
        try:
            harness.wait_until(lambda: "client ready" in open(os.path.join(c.logdir,
                                                                           "client.log")).read(), 30)
            if "test_dummy_client.py" in wanted:
                pytest(c, "test_dummy_client.py")
            if "test_multi_dummy_clients.py" in wanted:
                multi_dummy(c)
        finally:
            harness.stop(client)
finally:
    c.stop()

if any(f in wanted for f in TIER):
    for name in (f for f in TIER if f in wanted):
        c = Cluster(stores=0, extra_master=["--default-kv-lease-ttl", "500"] + TIER_MASTER)
        try:
            with tempfile.TemporaryDirectory(prefix="mooncake-ref-ssd-") as ssd:
                pytest(c, name, {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": ssd})
        finally:
            c.stop()

print(f"reference tests: {totals['passed']} passed, {totals['failed']} failed, "
      f"{totals['errors']} errors, {totals['skipped']} skipped; files with failures: "
      f"{', '.join(bad_files) or 'none'}")
sys.exit(1 if bad_files else 0)
