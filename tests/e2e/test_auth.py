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
from harness import check, finish, run, start, stop

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
finally:
    c.stop()
finish()
