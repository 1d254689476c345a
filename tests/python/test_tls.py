"""mooncake.store over TLS (issue 22, point 1): an engine given tls_* keys in
its setup dict talks TLS to the master and serves its own segment over a TLS
data port, which the CLI reads with MOONCAKE_TLS_CA; without TLS keys the
engine cannot reach the TLS master. Certificates are made with the openssl
command (skipped without it)."""
import os
import shutil
import subprocess

import pytest

from harness import BIN, free_port, start, stop, tempdir, wait_until
from mooncake.store import MooncakeDistributedStore

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the openssl command makes the test certificates")


def openssl(d, *args):
    subprocess.run(["openssl"] + list(args), check=True, cwd=d,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def tls_master():
    d = tempdir("mooncake-pytest-tls-")
    with open(os.path.join(d, "san.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for key in ("ca.key", "node.key"):
        openssl(d, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", key)
    openssl(d, "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=ca", "-days", "1",
            "-out", "ca.pem")
    openssl(d, "req", "-new", "-key", "node.key", "-subj", "/CN=node", "-out", "node.csr")
    openssl(d, "x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "san.cnf", "-out", "node.pem")
    files = {n: os.path.join(d, n) for n in ("ca.pem", "node.pem", "node.key")}
    port = free_port()
    log = os.path.join(d, "master.log")
    p = start(["master", "--port", str(port), "--metrics-port", str(free_port()),
               "--rpc-address", "127.0.0.1", "--data-dir", "none",
               "--tls-cert", files["node.pem"], "--tls-key", files["node.key"]], log_name=log)
    assert wait_until(lambda: "master listening" in open(log).read() or p.poll() is not None, 20)
    assert p.poll() is None, open(log).read()
    yield port, files
    stop(p)


def setup_dict(port, files, tls=True):
    d = {"local_hostname": "127.0.0.1", "metadata_server": "http://127.0.0.1:1/metadata",
         "global_segment_size": str(64 << 20), "local_buffer_size": str(16 << 20),
         "protocol": "tcp", "master_server_address": f"127.0.0.1:{port}"}
    if tls:
        d.update(tls_cert=files["node.pem"], tls_key=files["node.key"], tls_ca=files["ca.pem"])
    return d


def test_an_engine_with_tls_keys_serves_its_segment_over_tls(tls_master):
    port, files = tls_master
    s = MooncakeDistributedStore()
    assert s.setup(setup_dict(port, files)) == 0
    try:
        data = os.urandom(3 << 20)
        assert s.put("py-tls", data) == 0
        assert s.get("py-tls") == data
        # The only segment is the engine's own: the CLI reads it through the
        # engine's data port, over TLS.
        env = dict(os.environ, MOONCAKE_MASTER=f"127.0.0.1:{port}", MOONCAKE_TLS_CA=files["ca.pem"])
        r = subprocess.run([BIN, "get", "py-tls", "--no-shm"], env=env, capture_output=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout == data
    finally:
        s.close()


def test_an_engine_without_tls_keys_cannot_reach_a_tls_master(tls_master):
    port, files = tls_master
    s = MooncakeDistributedStore()
    assert s.setup(setup_dict(port, files, tls=False)) != 0


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is the HTTPS client here")
def test_the_client_http_port_speaks_tls_with_the_same_keys(tls_master):
    port, files = tls_master
    http_port = free_port()
    s = MooncakeDistributedStore()
    d = dict(setup_dict(port, files), enable_client_http_server=True, client_http_port=http_port)
    assert s.setup(d) == 0
    try:
        base = f"https://127.0.0.1:{http_port}"
        r = subprocess.run(["curl", "-sS", "--max-time", "20", "--cacert", files["ca.pem"],
                            "-X", "PUT", "--data-binary", "over tls",
                            f"{base}/api/put?key=py-tls-http"], capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr.decode()
        assert s.get("py-tls-http") == b"over tls"
        r = subprocess.run(["curl", "-sS", "--max-time", "20", "--cacert", files["ca.pem"],
                            f"{base}/health"], capture_output=True, timeout=30)
        assert b'"healthy"' in r.stdout
        # Plain HTTP on the TLS port gets no answer.
        r = subprocess.run(["curl", "-sS", "--max-time", "5", f"http://127.0.0.1:{http_port}/health"],
                           capture_output=True, timeout=30)
        assert b'"healthy"' not in r.stdout
    finally:
        s.close()
