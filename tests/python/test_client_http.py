"""The embedded client's HTTP API (issue 30 point 3): setup(...,
enable_client_http_server=True, client_http_port=N) serves the reference's
/api/* routes, /health and /metrics; checked with curl and with Python's
http.client. Bodies are binary-safe, a body past the limit is a 413 naming
it, and with the cluster's auth token the /api/ routes need it."""
import http.client
import json
import os
import shutil
import subprocess

import pytest

from cluster import Cluster
from harness import free_port, tempdir
from mooncake.store import MooncakeDistributedStore

from conftest import pattern, setup_args

# The default body limit (rest::kDefaultMaxBodyBytes).
MAX_BODY = 64 << 20


def serve(cluster_or_args, port, **extra):
    s = MooncakeDistributedStore()
    args = cluster_or_args
    assert s.setup(*args, enable_client_http_server=True, client_http_port=port, **extra) == 0
    return s


@pytest.fixture
def api(cluster):
    port = free_port()
    s = serve(setup_args(cluster, 32 << 20), port)
    yield s, port
    s.close()


def call(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    out = (r.status, r.getheader("Content-Type"), r.read())
    c.close()
    return out


def curl(*args):
    r = subprocess.run(["curl", "-sS", "--max-time", "30", *args], capture_output=True, check=True)
    return r.stdout


def test_the_reference_json_put_and_the_other_routes_answer_as_its_service(api):
    s, port = api
    body = json.dumps({"key": "http-json", "value": "hello from json"})
    status, ctype, out = call(port, "PUT", "/api/put", body, {"Content-Type": "application/json"})
    assert (status, json.loads(out)) == (200, {"status": "success"})
    assert s.get("http-json") == b"hello from json"
    status, ctype, out = call(port, "GET", "/api/get/http-json")
    assert (status, ctype, out) == (200, "application/octet-stream", b"hello from json")
    assert json.loads(call(port, "GET", "/api/exist/http-json")[2]) == {"exists": True}
    assert json.loads(call(port, "GET", "/api/exist/http-none")[2]) == {"exists": False}
    assert call(port, "GET", "/api/get/http-none")[0] == 404
    # A key just read is leased to its reader for a while: remove one not read.
    assert call(port, "PUT", "/api/put?key=http-rm", b"gone soon")[0] == 200
    r = call(port, "DELETE", "/api/remove/http-rm")
    assert r[0] == 200, r
    assert s.is_exist("http-rm") == 0
    status, _, out = call(port, "DELETE", "/api/remove/http-rm")
    assert status == 404 and json.loads(out)["error_code"] == -704
    status, _, out = call(port, "PUT", "/api/put", json.dumps({"key": "k"}),
                          {"Content-Type": "application/json"})
    assert status == 400 and "Missing key or value" in json.loads(out)["error"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl drives this test")
def test_binary_bodies_go_through_curl_byte_for_byte(api):
    s, port = api
    d = tempdir("mooncake-pytest-http-")
    src = os.path.join(d, "in.bin")
    data = bytes(range(256)) * 4096 + b"\x00\r\n\x00"  # 1 MiB and a bit, every byte value
    with open(src, "wb") as f:
        f.write(data)
    base = f"http://127.0.0.1:{port}"
    out = curl("-X", "PUT", "-H", "Content-Type: application/octet-stream",
               "--data-binary", f"@{src}", f"{base}/api/put?key=http-bin")
    assert json.loads(out) == {"status": "success"}
    assert curl(f"{base}/api/get/http-bin") == data
    assert s.get("http-bin") == data
    # An object the engine put is readable over HTTP too.
    assert s.put("http-from-engine", pattern("http-from-engine", 100_000)) == 0
    assert curl(f"{base}/api/get/http-from-engine") == pattern("http-from-engine", 100_000)
    # curl's own default type (application/x-www-form-urlencoded) is a raw
    # body too, however large: not a form with an 8 KiB limit.
    out = curl("-X", "PUT", "--data-binary", f"@{src}", f"{base}/api/put/http-form-typed")
    assert json.loads(out) == {"status": "success"}
    assert curl(f"{base}/api/get/http-form-typed") == data
    out = curl("-X", "PUT", "-F", f"v=@{src}", "-w", "%{http_code}", "-o", "/dev/null",
               f"{base}/api/put/http-multipart")
    assert out == b"415"
    out = json.loads(curl("-X", "DELETE", f"{base}/api/remove/http-bin"))
    assert out == {"status": "success"}
    assert s.is_exist("http-bin") == 0


def test_a_body_past_the_limit_is_refused_with_413_before_it_is_read(api):
    s, port = api
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.putrequest("PUT", "/api/put?key=http-big")
    c.putheader("Content-Type", "application/octet-stream")
    c.putheader("Content-Length", str(MAX_BODY + 1))
    c.endheaders()  # no body follows: the answer must not wait for it
    r = c.getresponse()
    assert r.status == 413
    assert f"{MAX_BODY} bytes (max_body_bytes)" in json.loads(r.read())["error"]
    c.close()
    assert s.is_exist("http-big") == 0
    metrics = call(port, "GET", "/metrics")[2].decode()
    assert "client_http_body_too_large_total 1" in metrics


def test_health_and_metrics_describe_the_client(api):
    s, port = api
    status, ctype, out = call(port, "GET", "/health")
    assert (status, json.loads(out)) == (200, {"status": "healthy", "code": 0})
    assert s.put("http-metrics", b"x" * 1000) == 0
    status, ctype, out = call(port, "GET", "/metrics")
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    assert 'client_transfer_ops_total{path="tcp"}' in out.decode()
    assert b"transfer ops" in call(port, "GET", "/metrics/summary")[2]


def test_closing_the_store_closes_its_http_port(cluster):
    port = free_port()
    s = serve(setup_args(cluster), port)
    assert call(port, "GET", "/health")[0] == 200
    s.close()
    with pytest.raises(OSError):
        call(port, "GET", "/health")


def test_with_the_cluster_token_the_api_needs_it_and_remove_all_clears_its_cluster():
    c = Cluster(stores=0, token="http-t0ken", logdir=tempdir("mooncake-pytest-http-auth-"))
    try:
        port = free_port()
        args = ("127.0.0.1", f"http://127.0.0.1:{c.meta_port}/metadata", 0, 16 << 20, "tcp", "",
                f"127.0.0.1:{c.rpc_port}")
        s = MooncakeDistributedStore()
        assert s.setup({"local_hostname": args[0], "metadata_server": args[1],
                        "global_segment_size": str(32 << 20), "local_buffer_size": str(16 << 20),
                        "protocol": "tcp", "master_server_address": args[6],
                        "auth_token": "http-t0ken", "enable_client_http_server": True,
                        "client_http_port": port}) == 0
        status, _, _ = call(port, "PUT", "/api/put?key=http-auth", b"v")
        assert status == 401
        assert call(port, "GET", "/api/get/http-auth",
                    headers={"Authorization": "Bearer wrong"})[0] == 401
        good = {"Authorization": "Bearer http-t0ken"}
        assert call(port, "PUT", "/api/put?key=http-auth", b"v", good)[0] == 200
        assert call(port, "GET", "/api/get/http-auth", headers=good)[2] == b"v"
        assert call(port, "PUT", "/api/put?key=http-auth-2", b"w", good)[0] == 200
        # This cluster is the test's own, so remove_all takes nothing of others'.
        # (The key just read is leased, so it may be counted out.)
        out = json.loads(call(port, "DELETE", "/api/remove_all", headers=good)[2])
        assert out["status"].startswith("success removed ")
        assert s.is_exist("http-auth-2") == 0
        assert call(port, "GET", "/health")[0] == 200
        assert "client_http_auth_failures_total 2" in call(port, "GET", "/metrics")[2].decode()
        s.close()
    finally:
        c.stop()


def test_a_bad_port_value_fails_setup(cluster):
    s = MooncakeDistributedStore()
    d = {"local_hostname": "127.0.0.1",
         "metadata_server": f"http://127.0.0.1:{cluster.meta_port}/metadata",
         "global_segment_size": "0", "local_buffer_size": str(16 << 20), "protocol": "tcp",
         "master_server_address": f"127.0.0.1:{cluster.rpc_port}",
         "enable_client_http_server": "yes"}
    assert s.setup(d) != 0
