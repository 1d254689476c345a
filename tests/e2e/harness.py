"""Shared helpers for mooncake's end-to-end tests.

Every test runs the real `mooncake` binary (MOONCAKE_BIN) as separate
processes on 127.0.0.1, on ports picked free at run time, and stops every
process it started by its pid, even when a check fails. Checks are counted;
the script exits 1 if any failed.
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = os.environ.get("MOONCAKE_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "src", "cli", "mooncake")
SRC = os.environ.get("MOONCAKE_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")

_procs = []
_failures = 0
_checks = 0

# Sanitizer reports of every process a test starts land here (not on a
# stderr nobody reads, as with servers logging to /dev/null), and finish()
# fails the test if any appeared: a leak or UB report in a store killed by
# SIGTERM counts as much as one in a client.
_san_dir = tempfile.mkdtemp(prefix="mc-sanitizer-")


_tempdirs = []


def tempdir(prefix):
    """A fresh directory for a test's logs or data; finish() removes it when
    every check passed, and keeps it (for the logs) when one failed."""
    d = tempfile.mkdtemp(prefix=prefix)
    _tempdirs.append(d)
    return d


def _child_env(env):
    """The environment of a started mooncake: ours without MOONCAKE_*
    (tests set exactly what they mean), plus `env`, plus sanitizer log paths."""
    full_env = dict(os.environ)
    for k in list(full_env):
        if k.startswith("MOONCAKE_") and k not in ("MOONCAKE_BIN", "MOONCAKE_SRC"):
            del full_env[k]
    if env:
        full_env.update(env)
    for var, name in (("ASAN_OPTIONS", "asan"), ("UBSAN_OPTIONS", "ubsan")):
        opts = [o for o in full_env.get(var, "").split(":") if o]
        opts.append(f"log_path={os.path.join(_san_dir, name)}")
        full_env[var] = ":".join(opts)
    return full_env


_ports_given = set()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago, never one this
    process handed out before (the kernel can give the same one twice)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_given:
            _ports_given.add(port)
            return port


def run(args, input=None, env=None, timeout=60):
    """Runs `mooncake ARGS` to completion; returns CompletedProcess (bytes)."""
    return subprocess.run([BIN] + list(args), input=input, env=_child_env(env),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def start(args, env=None, log_name=None):
    """Starts `mooncake ARGS` in the background; it is killed at exit."""
    full_env = _child_env(env)
    log = open(log_name or os.devnull, "wb")
    p = subprocess.Popen([BIN] + list(args), env=full_env, stdout=log, stderr=subprocess.STDOUT)
    _procs.append(p)
    return p


def stop(p, sig=signal.SIGTERM, timeout=10):
    """Stops one started process by its pid; SIGKILL if it does not exit."""
    if p.poll() is None:
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode


@atexit.register
def _stop_all():
    for p in _procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def wait_until(cond, timeout, poll=0.05):
    """Polls cond() until it is true or `timeout` seconds pass; returns its
    last value. The one bounded wait on real processes every test uses: the
    processes run on the wall clock, so there is no clock to advance."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(poll)


def wait_http(url, timeout=15.0):
    """Waits until GET url answers (any HTTP status). Returns True if it did."""
    def answers():
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
    return wait_until(answers, timeout)


def wait_port(port, timeout=15.0):
    def accepts():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False
    return wait_until(accepts, timeout)


def http(method, url, body=None, timeout=10, headers=None):
    """Returns (status, body bytes) for one HTTP request."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def check(cond, what):
    global _failures, _checks
    _checks += 1
    if cond:
        print(f"ok   {what}")
    else:
        _failures += 1
        print(f"FAIL {what}")
    sys.stdout.flush()
    return cond


def finish():
    """Prints the totals and exits 1 if any check failed."""
    _stop_all()
    reports = sorted(os.listdir(_san_dir))
    for name in reports:
        with open(os.path.join(_san_dir, name), errors="replace") as f:
            print(f"--- sanitizer report {name}:\n{f.read()[:4000]}")
    check(not reports, f"no sanitizer reports from started processes ({len(reports)})")
    shutil.rmtree(_san_dir, ignore_errors=True)
    if _failures == 0:
        for d in _tempdirs:
            shutil.rmtree(d, ignore_errors=True)
    else:
        print("kept for inspection: " + " ".join(_tempdirs))
    print(f"{_checks - _failures} checks passed, {_failures} failed")
    sys.exit(1 if _failures else 0)
