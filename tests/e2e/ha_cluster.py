"""An HA group on loopback for the HA tests and benchmark: etcd members
(Debian's etcd-server, /usr/bin/etcd), masters with --ha-etcd, and stores
that find the leader through etcd://. Every process is started here and
stopped by its pid (harness)."""
import json
import os
import shutil
import signal
import subprocess
import time

import harness
from harness import free_port, start, stop, tempdir, wait_http, wait_until, http

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


class Etcd:
    """An etcd cluster of `members` members, each restartable with its data."""

    def __init__(self, members=3, logdir=None, extra=(), env=None):
        """`extra`: more etcd flags; `env`: more environment (GOMAXPROCS...)."""
        self.logdir = logdir or tempdir("mooncake-ha-etcd-")
        self.extra = list(extra)
        self.env = dict(os.environ, **(env or {}))
        self.names = [f"e{i}" for i in range(members)]
        self.client_ports = [free_port() for _ in self.names]
        self.peer_ports = [free_port() for _ in self.names]
        self.procs = [None] * members
        self.initial = ",".join(f"{n}=http://127.0.0.1:{p}"
                                for n, p in zip(self.names, self.peer_ports))
        for i in range(members):
            self.start_member(i)
        if not wait_until(self.healthy, 30, poll=0.2):
            raise RuntimeError("etcd did not come up; logs in " + self.logdir)

    @property
    def urls(self):
        return ",".join(f"http://127.0.0.1:{p}" for p in self.client_ports)

    @property
    def address(self):
        return "etcd://" + ",".join(f"127.0.0.1:{p}" for p in self.client_ports)

    def start_member(self, i):
        name = self.names[i]
        log = open(os.path.join(self.logdir, f"{name}.log"), "ab")
        args = [ETCD, "--name", name, "--data-dir", os.path.join(self.logdir, name + ".etcd"),
                "--listen-client-urls", f"http://127.0.0.1:{self.client_ports[i]}",
                "--advertise-client-urls", f"http://127.0.0.1:{self.client_ports[i]}",
                "--listen-peer-urls", f"http://127.0.0.1:{self.peer_ports[i]}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer_ports[i]}",
                "--initial-cluster", self.initial, "--initial-cluster-state", "new",
                "--heartbeat-interval", "50", "--election-timeout", "500"] + self.extra
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        harness._procs.append(p)
        self.procs[i] = p
        return p

    def kill_member(self, i, sig=signal.SIGKILL):
        stop(self.procs[i], sig)

    def healthy(self, i=None):
        members = range(len(self.names)) if i is None else [i]
        for m in members:
            status, body = self.post(m, "/v3/maintenance/status", b"{}")
            if status != 200 or b'"leader"' not in body:
                return False
        return True

    def post(self, i, path, body):
        try:
            return http("POST", f"http://127.0.0.1:{self.client_ports[i]}{path}", body, timeout=2)
        except OSError:
            return 0, b""

    def db_size(self):
        """The largest member's database size and its bytes in use ((0, 0)
        if none answers)."""
        best = (0, 0)
        for i in range(len(self.names)):
            doc = self.status(i)
            best = max(best, (int(doc.get("dbSize", 0)), int(doc.get("dbSizeInUse", 0))))
        return best

    def status(self, i):
        """Member i's /v3/maintenance/status reply ({} if it does not answer)."""
        status, body = self.post(i, "/v3/maintenance/status", b"{}")
        return json.loads(body) if status == 200 else {}

    def raft_leader(self):
        """The index of the member that is etcd's raft leader (None: none says so)."""
        for i in range(len(self.names)):
            doc = self.status(i)
            if doc and doc.get("leader") == doc["header"]["member_id"]:
                return i
        return None

    def move_leader(self, to):
        """Makes member `to` etcd's raft leader; True once it says it leads."""
        lead = self.raft_leader()
        if lead is None:
            return False
        if lead != to:
            target = self.status(to)["header"]["member_id"]
            self.post(lead, "/v3/maintenance/transfer-leadership",
                      json.dumps({"targetID": target}).encode())
        return wait_until(lambda: self.raft_leader() == to, 10, poll=0.1)

    def grpc_calls(self, i, method):
        """gRPC calls of `method` (Txn, Range...) member i answered OK: its
        own clients' and those its JSON gateway made for its HTTP clients."""
        try:
            _, body = http("GET", f"http://127.0.0.1:{self.client_ports[i]}/metrics", None,
                           timeout=2)
        except OSError:
            return 0
        want = f'grpc_code="OK",grpc_method="{method}",'
        return sum(int(float(line.rsplit(None, 1)[1])) for line in body.decode().splitlines()
                   if line.startswith("grpc_server_handled_total{") and want in line)

    def stop(self):
        for p in self.procs:
            if p is not None:
                stop(p)


class HaGroup:
    """`masters` masters on one etcd, and stores that find the leader through it."""

    def __init__(self, etcd, masters=2, ttl=2, cluster="ha-test", logdir=None, extra=()):
        self.etcd = etcd
        self.ttl = ttl
        self.cluster = cluster
        self.logdir = logdir or tempdir("mooncake-ha-")
        self.rpc_ports = [free_port() for _ in range(masters)]
        self.admin_ports = [free_port() for _ in range(masters)]
        self.procs = [None] * masters
        self.extra = list(extra)
        self.stores = []
        for i in range(masters):
            self.start_master(i)

    @property
    def env(self):
        return {"MOONCAKE_MASTER": self.etcd.address, "MC_STORE_CLUSTER_ID": self.cluster,
                "MOONCAKE_TE_META_DATA_SERVER": self.etcd.address}

    @property
    def list_env(self):
        e = dict(self.env)
        e["MOONCAKE_MASTER"] = ",".join(f"127.0.0.1:{p}" for p in self.rpc_ports)
        return e

    def start_master(self, i):
        log = os.path.join(self.logdir, f"master-{i}-{time.time_ns()}.log")
        self.procs[i] = start(
            ["master", "--ha-etcd", self.etcd.urls, "--ha-cluster", self.cluster,
             "--ha-lease-ttl", str(self.ttl), "--port", str(self.rpc_ports[i]),
             "--metrics-port", str(self.admin_ports[i]), "--rpc-address", "127.0.0.1",
             "--data-dir", "none"] + self.extra, log_name=log)
        self.procs[i].log_path = log
        if not wait_http(f"http://127.0.0.1:{self.admin_ports[i]}/health", 20):
            raise RuntimeError("master did not come up; log: " + open(log).read()[-2000:])

    def admin(self, i, path):
        try:
            return http("GET", f"http://127.0.0.1:{self.admin_ports[i]}{path}", timeout=2)
        except OSError:
            return 0, b""

    def role(self, i):
        if self.procs[i] is None or self.procs[i].poll() is not None:
            return "dead"
        status, body = self.admin(i, "/role")
        return body.decode() if status == 200 else "?"

    def leader(self, timeout=30):
        """The index of the master that leads (and serves), waiting for one."""
        found = [None]

        def one():
            for i in range(len(self.procs)):
                if self.role(i) == "leader" and self.admin(i, "/ha_status")[1] == b"serving":
                    found[0] = i
                    return True
            return False
        wait_until(one, timeout, poll=0.05)
        return found[0]

    def add_store(self, segment="64mb", extra=()):
        log = os.path.join(self.logdir, f"store-{len(self.stores)}-{time.time_ns()}.log")
        p = start(["store", "--segment", segment] + list(extra), env=self.env, log_name=log)
        p.log_path = log
        self.stores.append(p)
        return p

    def segments(self):
        i = self.leader(10)
        if i is None:
            return []
        status, body = self.admin(i, "/get_all_segments")
        return [l for l in body.decode().splitlines() if l.strip()] if status == 200 else []
