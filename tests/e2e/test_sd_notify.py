"""Type=notify readiness: each role sends READY=1 to $NOTIFY_SOCKET only once
it really serves, and STOPPING=1 when it stops.

The test plays systemd: it binds the notify socket itself (an abstract name
for the master and the store, a path for the metadata server), starts the
role with NOTIFY_SOCKET set, and the moment READY=1 arrives checks, without
waiting, that the role answers: the master's RPC port and /health, the
store's segment on the master, the metadata server's HTTP API.
"""
import os
import re
import signal
import socket

from harness import check, finish, free_port, http, start, stop, tempdir, wait_port

READY_TIMEOUT_S = 30


class FakeSystemd:
    """A notify socket; name starting with '@' is abstract, else a path."""

    def __init__(self, name):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + name[1:] if name.startswith("@") else name)
        self.sock.settimeout(READY_TIMEOUT_S)

    def next_notice(self):
        try:
            return self.sock.recv(8192).decode()
        except socket.timeout:
            return None

    def close(self):
        self.sock.close()
        if not self.name.startswith("@"):
            os.unlink(self.name)


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


logs = tempdir("mooncake-sd-notify-")
rpc_port, metrics_port, meta_port = free_port(), free_port(), free_port()
meta_url = f"http://127.0.0.1:{meta_port}/metadata"

# metadata-server: a socket at a filesystem path.
meta_systemd = FakeSystemd(os.path.join(logs, "notify-meta"))
meta = start(["metadata-server", "--host", "127.0.0.1", "--port", str(meta_port)],
             env={"NOTIFY_SOCKET": meta_systemd.name},
             log_name=os.path.join(logs, "metadata-server.log"))
notice = meta_systemd.next_notice()
check(notice == "READY=1", f"metadata-server sends READY=1 ({notice!r})")
status, _ = http("GET", meta_url + "?key=absent")
check(status == 404, f"metadata-server answers HTTP the moment it is ready ({status})")

# master: an abstract socket, with a state directory as under systemd.
master_systemd = FakeSystemd(f"@mooncake-test-notify-master-{os.getpid()}")
master = start(["master", "--rpc-address", "127.0.0.1", "--rpc-port", str(rpc_port),
                "--metrics-port", str(metrics_port), "--data-dir", os.path.join(logs, "state")],
               env={"NOTIFY_SOCKET": master_systemd.name},
               log_name=os.path.join(logs, "master.log"))
notice = master_systemd.next_notice()
check(notice == "READY=1", f"master sends READY=1 ({notice!r})")
check(accepts(rpc_port), "master's RPC port accepts the moment it is ready")
status, body = http("GET", f"http://127.0.0.1:{metrics_port}/health")
check(status == 200, f"master's /health answers 200 the moment it is ready ({status})")


def segment_count():
    status, body = http("GET", f"http://127.0.0.1:{metrics_port}/metrics")
    m = re.search(r"^master_segment_count (\d+)$", body.decode(), re.M)
    return int(m.group(1)) if status == 200 and m else -1


# store: READY=1 only once the master has its segment.
store_systemd = FakeSystemd(f"@mooncake-test-notify-store-{os.getpid()}")
store = start(["store", "--master", f"127.0.0.1:{rpc_port}", "--metadata-server", meta_url,
               "--segment", "64mb", "--no-hugepages", "--no-prefault",
               "--local-hostname", "127.0.0.1"],
              env={"NOTIFY_SOCKET": store_systemd.name},
              log_name=os.path.join(logs, "store.log"))
notice = store_systemd.next_notice()
check(notice == "READY=1", f"store sends READY=1 ({notice!r})")
check(segment_count() == 1, f"the master holds the store's segment when the store is ready "
      f"({segment_count()} segments)")

for name, proc, systemd in (("store", store, store_systemd), ("master", master, master_systemd),
                            ("metadata-server", meta, meta_systemd)):
    os.kill(proc.pid, signal.SIGTERM)
    notice = systemd.next_notice()
    check(notice == "STOPPING=1", f"{name} sends STOPPING=1 on SIGTERM ({notice!r})")
    code = stop(proc)
    check(code == 0, f"{name} exits 0 after SIGTERM ({code})")
    systemd.close()

# Without NOTIFY_SOCKET nothing changes: a role starts and stops as before.
plain = start(["metadata-server", "--host", "127.0.0.1", "--port", str(meta_port)],
              log_name=os.path.join(logs, "metadata-server-plain.log"))
check(wait_port(meta_port, 15), "metadata-server without NOTIFY_SOCKET serves")
check(stop(plain) == 0, "and stops with exit 0")
finish()
