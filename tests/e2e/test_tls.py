"""TLS end to end (issue 22, point 1): a master (RPC, admin HTTP, embedded
metadata HTTP) and a store (data port) with [tls] cert/key/ca serve the CLI
over TLS (put/get over the data port and the same-host path); a plaintext
client is refused with a clear error on both sides, and so is a TLS client
of a plaintext master; TLS 1.2 is refused by default; mutual TLS refuses a
client without a certificate and serves one with; a missing, expired or
mismatched certificate or key stops a server (master, store, metadata
server) at start with exit 2 and a message naming the file; SIGHUP loads a
renewed certificate while an open data-port connection keeps working; a
standalone metadata server serves HTTPS and reloads too.

Certificates are made at run time with the openssl command (exit 77 without it).
"""
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.request

from dataport import HELLO, HELLO_MAGIC, INVALID_READ, READ, REPLY, REPLY_MAGIC, REQUEST, \
    REQUEST_MAGIC, NO_GRANT
from harness import check, finish, free_port, run, start, stop, tempdir, wait_until

if shutil.which("openssl") is None:
    print("skip: the openssl command is needed to make test certificates (apt install openssl)")
    sys.exit(77)

d = tempdir("mooncake-tls-")
PROTOCOL_ERROR = -903


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, cwd=d,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def path(name):
    return os.path.join(d, name)


def ec_key(name):
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", name)


def leaf(name, cn, days="2"):
    """name.pem/name.key signed by ca.pem, for 127.0.0.1 and localhost."""
    ec_key(name + ".key.tmp")
    openssl("req", "-new", "-key", name + ".key.tmp", "-subj", "/CN=" + cn, "-out", name + ".csr")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", days, "-extfile", "san.cnf", "-out", name + ".pem.tmp")
    # Renamed into place, as an operator renewing a certificate would.
    os.replace(path(name + ".key.tmp"), path(name + ".key"))
    os.replace(path(name + ".pem.tmp"), path(name + ".pem"))


with open(path("san.cnf"), "w") as f:
    f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
ec_key("ca.key")
openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=mooncake e2e CA", "-days", "2",
        "-out", "ca.pem")
leaf("node", "node-first")
leaf("client", "client")
leaf("expired", "expired", days="-1")
CA, CERT, KEY = path("ca.pem"), path("node.pem"), path("node.key")
TLS_FLAGS = ["--tls-cert", CERT, "--tls-key", KEY, "--tls-ca", CA]
ctx = ssl.create_default_context(cafile=CA)
# For a mutual-TLS master, whose every port (admin HTTP too) asks for one.
client_ctx = ssl.create_default_context(cafile=CA)
client_ctx.load_cert_chain(path("client.pem"), path("client.key"))


def https(url, context=ctx):
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return None, str(e).encode()


def log_has(log, text, timeout=10):
    return wait_until(lambda: text in open(log, errors="replace").read(), timeout)


def start_master(extra, tls=True, name="master", context=ctx):
    rpc, admin, meta = free_port(), free_port(), free_port()
    log = path(f"{name}.log")
    p = start(["master", "--port", str(rpc), "--metrics-port", str(admin),
               "--enable-http-metadata-server", "--http-metadata-server-port", str(meta),
               "--http-metadata-server-host", "127.0.0.1", "--rpc-address", "127.0.0.1",
               "--data-dir", "none"] + (TLS_FLAGS if tls else []) + extra, log_name=log)
    scheme_ok = (lambda: https(f"https://127.0.0.1:{admin}/health", context)[0] == 200) if tls else \
        (lambda: p.poll() is not None or _plain_up(admin))
    if not wait_until(lambda: p.poll() is not None or scheme_ok(), 20) or p.poll() is not None:
        raise RuntimeError(f"{name} did not come up: " + open(log).read()[-2000:])
    p.rpc, p.admin, p.meta, p.log = rpc, admin, meta, log
    return p


def _plain_up(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
            return True
    except OSError:
        return False


def peer_cn(port):
    """The CN of the certificate a TLS server shows on 127.0.0.1:port."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def read_no_grant(sock, rid):
    """A READ without a grant: the store answers INVALID_READ and keeps the connection."""
    sock.sendall(REQUEST.pack(REQUEST_MAGIC, READ, 0, rid, 0, 16, *NO_GRANT))
    magic, status, _, n = REPLY.unpack(recv_exact(sock, REPLY.size))
    recv_exact(sock, n)
    return magic == REPLY_MAGIC and status == INVALID_READ


master = start_master([])
env = {"MOONCAKE_MASTER": f"127.0.0.1:{master.rpc}",
       "MOONCAKE_TE_META_DATA_SERVER": f"https://127.0.0.1:{master.meta}/metadata",
       "MOONCAKE_TLS_CA": CA}
store_log = path("store.log")
store = start(["store", "--segment", "32mb", "--no-hugepages"] + TLS_FLAGS, env=env,
              log_name=store_log)


def segments():
    st, body = https(f"https://127.0.0.1:{master.admin}/get_all_segments")
    return body.decode().split() if st == 200 else []


check(wait_until(lambda: segments() or store.poll() is not None, 30) and store.poll() is None,
      "a TLS store mounts on a TLS master")
segment = (segments() or ["?"])[0]

# --- put/get over TLS: the data port (--no-shm) and the same-host path.
for label, extra, size in (("tcp", ["--no-shm"], 300000), ("tcp 5 MB", ["--no-shm"], 5 << 20),
                           ("same-host", [], 4096)):
    data = os.urandom(size)
    key = "tls-" + label.replace(" ", "-")
    r = run(["put", key, "-"] + extra, input=data, env=env)
    check(r.returncode == 0, f"{label}: put over TLS {r.stderr.decode().strip()}")
    g = run(["get", key] + extra, env=env)
    check(g.returncode == 0 and g.stdout == data, f"{label}: get over TLS returns the bytes")

check(https(f"https://127.0.0.1:{master.admin}/health")[0] == 200, "admin HTTP answers over TLS")
check(not _plain_up(master.admin), "admin HTTP does not answer plain HTTP")
st, body = https(f"https://127.0.0.1:{master.meta}/metadata?key=mooncake/ram/{segment}")
check(st == 200 and b"tcp_data_port" in body,
      f"the store published its descriptor to the metadata server over TLS ({st})")

# --- plaintext client of a TLS master: a clear error on both sides.
plain_env = {k: v for k, v in env.items() if k != "MOONCAKE_TLS_CA"}
r = run(["ls"], env=plain_env)
err = r.stderr.decode().strip()
check(r.returncode != 0 and "requires TLS" in err and "--tls-ca" in err,
      f"a plaintext client is told the master requires TLS (exit {r.returncode}): {err}")
check(log_has(master.log, "refused a plaintext connection"),
      "the master logs the plaintext client it refused")

# --- plaintext client of a TLS data port.
grants = run(["get", "tls-tcp", "--print-grants"], env=env)
import json  # noqa: E402  (only here)
endpoint = json.loads(grants.stdout)["replicas"][0][0]["endpoint"]
host, port = endpoint.rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=10) as s:
    magic, status, _, n = REPLY.unpack(recv_exact(s, REPLY.size))
    msg = recv_exact(s, n).decode()
check(magic == REPLY_MAGIC and status == PROTOCOL_ERROR and "requires TLS" in msg,
      f"a plaintext data-port client gets a reply saying TLS is required: {msg}")
check(log_has(store_log, "refused a plaintext connection"),
      "the store logs the plaintext data-port client it refused")

# --- TLS 1.2 is refused by default.
old = ssl.create_default_context(cafile=CA)
old.maximum_version = ssl.TLSVersion.TLSv1_2
try:
    with socket.create_connection(("127.0.0.1", master.rpc), timeout=5) as raw:
        with old.wrap_socket(raw, server_hostname="127.0.0.1"):
            refused = False
except ssl.SSLError as e:
    refused = "VERSION" in str(e).upper()
check(refused, "a TLS 1.2-only client is refused by the master")

# --- SIGHUP: a renewed certificate while a data-port connection stays up.
held = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10),
                       server_hostname="127.0.0.1")
hello = HELLO.unpack(recv_exact(held, HELLO.size))
check(hello[0] == HELLO_MAGIC and read_no_grant(held, 1), "a TLS data-port connection is open")
check(peer_cn(int(port)) == "node-first" and peer_cn(master.rpc) == "node-first",
      "store and master show the first certificate")
leaf("node", "node-renewed")
for p, log in ((store, store_log), (master, master.log)):
    os.kill(p.pid, signal.SIGHUP)
    check(log_has(log, "SIGHUP: TLS certificates reloaded"), f"{os.path.basename(log)}: reloaded")
check(peer_cn(int(port)) == "node-renewed", "a new data-port connection sees the renewed certificate")
check(peer_cn(master.rpc) == "node-renewed", "a new master connection sees the renewed certificate")
check(https(f"https://127.0.0.1:{master.admin}/health")[0] == 200, "admin HTTP after the reload")
check(read_no_grant(held, 2), "the connection opened before the reload still serves requests")
held.close()
g = run(["get", "tls-tcp", "--no-shm"], env=env)
check(g.returncode == 0 and len(g.stdout) == 300000, "get over TLS after the reload")
check(store.poll() is None and master.poll() is None, "SIGHUP stopped nothing")

# --- TLS client of a plaintext master.
plain = start_master([], tls=False, name="plain-master")
r = run(["ls"], env=dict(env, MOONCAKE_MASTER=f"127.0.0.1:{plain.rpc}"))
err = r.stderr.decode().strip()
check(r.returncode != 0 and "does not speak TLS" in err,
      f"a TLS client of a plaintext master says it does not speak TLS: {err}")
check(log_has(plain.log, "started TLS, but this master has no TLS"),
      "the plaintext master logs the TLS client")
stop(plain)

# --- mutual TLS.
mtls = start_master(["--tls-verify-peer"], name="mtls-master", context=client_ctx)
check(https(f"https://127.0.0.1:{mtls.admin}/health")[0] is None,
      "mutual TLS: admin HTTP refuses a client without a certificate")
menv = dict(env, MOONCAKE_MASTER=f"127.0.0.1:{mtls.rpc}")
r = run(["ls"], env=menv)
err = r.stderr.decode().strip()
check(r.returncode != 0 and "requires a client certificate" in err,
      f"mutual TLS: a client without a certificate is refused: {err}")
r = run(["ls"], env=dict(menv, MOONCAKE_TLS_CERT=path("client.pem"),
                         MOONCAKE_TLS_KEY=path("client.key")))
check(r.returncode == 0, f"mutual TLS: a client with a certificate is served {r.stderr.decode()}")
stop(mtls)

# --- a standalone metadata server over HTTPS, reloading on SIGHUP.
mport = free_port()
mlog = path("metadata-server.log")
ms = start(["metadata-server", "--host", "127.0.0.1", "--port", str(mport)] + TLS_FLAGS,
           log_name=mlog)
check(wait_until(lambda: https(f"https://127.0.0.1:{mport}/health")[0] == 200, 20),
      "a standalone metadata server answers over HTTPS")
check(not _plain_up(mport), "the standalone metadata server does not answer plain HTTP")
leaf("node", "node-third")
os.kill(ms.pid, signal.SIGHUP)
check(log_has(mlog, "SIGHUP: TLS certificates reloaded"), "the metadata server reloads on SIGHUP")
check(peer_cn(mport) == "node-third" and ms.poll() is None,
      "the metadata server shows the renewed certificate and keeps running")
check(stop(ms) == 0, "the metadata server stops cleanly")

# --- start-up errors: exit 2 naming the file.
for label, flags, needle in (
        ("missing certificate", ["--tls-cert", path("absent.pem"), "--tls-key", KEY],
         "cannot read TLS certificate '" + path("absent.pem") + "'"),
        ("expired certificate", ["--tls-cert", path("expired.pem"), "--tls-key",
                                 path("expired.key")],
         "TLS certificate '" + path("expired.pem") + "' expired on"),
        ("mismatched key", ["--tls-cert", CERT, "--tls-key", path("client.key")],
         "TLS key '" + path("client.key") + "' does not match certificate '" + CERT + "'")):
    for role, args in (("master", ["master", "--port", str(free_port()), "--metrics-port",
                                   str(free_port()), "--data-dir", "none"]),
                       ("store", ["store", "--segment", "16mb", "--no-hugepages"]),
                       ("metadata-server", ["metadata-server", "--port", str(free_port())])):
        r = run(args + flags, env=env, timeout=30)
        err = r.stderr.decode().strip()
        check(r.returncode == 2 and needle in err, f"{role}, {label}: exit {r.returncode}: {err}")

stop(store)
stop(master)
finish()
