"""Authentication end to end (issue 4, point 6): with a token on master,
stores and clients, put/get/ls/rm/exists work over TCP and the same-host
path; a client with no token or a wrong one is refused with a clear error and
exit 7, on the master's RPC port and on a store's data port; a store with a
wrong token cannot mount and exits 7.
"""
import json
import os

from cluster import Cluster
from dataport import AUTH_FAILED, DataPort, INVALID_READ, READ, grant_of
from harness import check, finish, http, run, start, stop

TOKEN = "e2e-" + os.urandom(8).hex()
payload = os.urandom(300000)

c = Cluster(stores=1, segment="64mb", token=TOKEN)
try:
    for path, extra in (("tcp", ["--no-shm"]), ("same-host", [])):
        k = f"auth-{path}"
        r = run(["put", k, "-"] + extra, input=payload, env=c.env)
        check(r.returncode == 0, f"{path}: put with the token {r.stderr.decode().strip()}")
        g = run(["get", k] + extra, env=c.env)
        check(g.returncode == 0 and g.stdout == payload, f"{path}: get with the token")
        ls = run(["ls", "auth-"] + extra, env=c.env)
        check(ls.returncode == 0 and k in ls.stdout.decode(), f"{path}: ls with the token")
        check(run(["exists", k] + extra, env=c.env).returncode == 0, f"{path}: exists")
    check(run(["put", "auth-rm", "-"], input=b"bye", env=c.env).returncode == 0, "put auth-rm")
    r = run(["rm", "auth-rm"], env=c.env)  # never read, so not leased
    check(r.returncode == 0, f"rm with the token {r.stderr.decode().strip()}")
    check(run(["exists", "auth-rm"], env=c.env).returncode == 1, "the removed key is gone")

    no_token = {k: v for k, v in c.env.items() if k != "MOONCAKE_AUTH_TOKEN"}
    wrong = dict(c.env, MOONCAKE_AUTH_TOKEN="not-" + TOKEN)
    for label, env, extra in (("no token", no_token, []), ("wrong token (env)", wrong, []),
                              ("wrong token (flag)", no_token, ["--auth-token", "x" + TOKEN])):
        for cmd in (["put", "intruder", "-"], ["get", "auth-tcp"], ["ls"], ["rm", "auth-tcp"],
                    ["exists", "auth-tcp"]):
            r = run(cmd + extra, input=b"x", env=env)
            err = r.stderr.decode().strip()
            check(r.returncode == 7 and "AUTH_FAILED" in err and "token" in err,
                  f"{label}: mooncake {cmd[0]} refused, exit {r.returncode}: {err}")
            check(TOKEN not in err, f"{label}: the error does not echo the token")
    g = run(["get", "auth-tcp", "--no-shm"], env=c.env)
    check(g.returncode == 0 and g.stdout == payload, "refused clients changed nothing")

    # The data port: the same token, proven by challenge and response.
    where = json.loads(run(["get", "auth-tcp", "--print-grants"], env=c.env).stdout)
    buf = where["replicas"][0][0]
    dp = DataPort(buf["endpoint"])
    check(dp.flags & 1, "the store's HELLO says authentication is required")
    try:
        st, msg = dp.request(READ, buf["offset"], buf["size"], grant_of(buf))
        check(st == AUTH_FAILED, f"data port: a READ before authenticating is refused: {msg.decode()}")
    except ConnectionError:
        check(False, "data port answers an unauthenticated READ before closing")
    dp.close()
    dp = DataPort(buf["endpoint"])
    st, msg = dp.auth("not-" + TOKEN)
    check(st == AUTH_FAILED, f"data port: a wrong token is refused: {msg.decode()}")
    dp.close()
    dp = DataPort(buf["endpoint"])
    st, _ = dp.auth(TOKEN)
    check(st == 0, "data port: the right token is accepted")
    st, body = dp.request(READ, buf["offset"], buf["size"], grant_of(buf))
    check(st == 0 and body == payload, "data port: after auth, a granted READ returns the object")
    st, _ = dp.request(READ, buf["offset"], 16)
    check(st == INVALID_READ, "data port: authentication does not replace the grant")
    dp.close()

    # A store with the wrong token cannot mount; it says why and exits 7.
    before = len(c.segments())
    log = os.path.join(c.logdir, "store-wrong-token.log")
    p = start(["store", "--segment", "32mb"], env=wrong, log_name=log)
    try:
        code = p.wait(timeout=30)
    except Exception:
        code = None
    text = open(log, errors="replace").read()
    check(code == 7, f"a store with a wrong token exits 7 ({code})")
    check("AUTH_FAILED" in text and "token" in text, "and says the master refused its token")
    check(len(c.segments()) == before, "and is not mounted")
    stop(p)

    # HTTP (issue 22, point 2): with a token, the metadata server's writes
    # and the admin routes that reveal keys need it; reads and probes stay
    # open; refusals are logged with the peer and counted, never echoed.
    meta = f"http://127.0.0.1:{c.meta_port}"
    seg = c.segments()[0]
    status, body = http("GET", f"{meta}/metadata?key=mooncake/ram/{seg}")
    check(status == 200 and json.loads(body).get("tcp_data_port"),
          f"the store published its descriptor with the token ({status})")
    bearer = {"Authorization": "Bearer " + TOKEN}
    guess = {"Authorization": "Bearer not-" + TOKEN}
    evil = b'{"name":"evil","tcp_data_port":1}'
    for label, headers in (("no token", {}), ("wrong token", guess)):
        status, body = http("PUT", f"{meta}/metadata?key=mooncake/ram/{seg}", evil, headers=headers)
        check(status == 401 and TOKEN.encode() not in body,
              f"metadata PUT with {label}: 401 without the token in the answer ({status})")
        status, _ = http("DELETE", f"{meta}/metadata?key=mooncake/ram/{seg}", headers=headers)
        check(status == 401, f"metadata DELETE with {label}: 401 ({status})")
        for route in ("/get_all_keys", "/query_key?key=auth-tcp"):
            status, body = http("GET", f"http://127.0.0.1:{c.metrics_port}{route}", headers=headers)
            check(status == 401 and TOKEN.encode() not in body,
                  f"admin {route} with {label}: 401 ({status})")
    status, body = http("GET", f"{meta}/metadata?key=mooncake/ram/{seg}")
    check(status == 200 and b"evil" not in body, "the refused PUTs changed nothing")
    status, _ = http("PUT", f"{meta}/metadata?key=mooncake/ram/extra", b"{}", headers=bearer)
    check(status == 200, f"metadata PUT with the token: 200 ({status})")
    status, _ = http("DELETE", f"{meta}/metadata?key=mooncake/ram/extra", headers=bearer)
    check(status == 200, f"metadata DELETE with the token: 200 ({status})")
    status, body = http("GET", f"http://127.0.0.1:{c.metrics_port}/get_all_keys", headers=bearer)
    check(status == 200 and b"auth-tcp" in body, f"admin /get_all_keys with the token ({status})")
    status, body = http("GET", f"http://127.0.0.1:{c.metrics_port}/query_key?key=auth-tcp",
                        headers=bearer)
    check(status == 200 and json.loads(body)["key"] == "auth-tcp", "admin /query_key with the token")
    for url in (f"http://127.0.0.1:{c.metrics_port}/health", f"{meta}/health",
                f"http://127.0.0.1:{c.metrics_port}/get_all_segments"):
        check(http("GET", url)[0] == 200, f"{url} stays open")
    status, body = http("GET", f"http://127.0.0.1:{c.metrics_port}/metrics")
    check(status == 200 and b"master_admin_auth_failures_total 4" in body,
          "the master counts the 4 refused admin requests in /metrics")
    status, body = http("GET", f"{meta}/metrics")
    check(status == 200 and b"metadata_auth_failures_total 4" in body,
          "the metadata server counts the 4 refused writes in /metrics")
    text = open(c.master_log, errors="replace").read()
    refusals = [l for l in text.splitlines() if "refused" in l and "auth token" in l]
    check(len(refusals) == 8 and all("127.0.0.1:" in l for l in refusals),
          f"each refusal is logged with the peer's address ({len(refusals)})")
    check(TOKEN not in text and ("not-" + TOKEN) not in text, "no token appears in the master's log")
finally:
    c.stop()
finish()
