#!/usr/bin/env python3
"""What one HA log txn costs etcd itself, through its JSON gateway and over
gRPC (issue 32, point 7): is a gRPC client worth it?

  python3 scripts/etcd_txn_cost.py [--txns 300] [--value-bytes 2048]

Starts a three-member etcd on 127.0.0.1 and sends --txns txns of the HA
log's shape (the leader key's create revision compared, a put of one entry
key of --value-bytes) to the raft leader member and to a follower:
  - gateway: POST /v3/kv/txn over one keep-alive connection (as EtcdHttp);
  - gRPC: the same txn as etcdserverpb.KV/Txn over one HTTP/2 connection
    (a minimal client below: frames and protobuf by hand);
  - with --etcdctl, also `etcdctl txn`, one process per txn, with the etcd
    CPU of as many `etcdctl get --consistency=s` subtracted; a dial per txn
    and etcd's idle CPU over the slower run swamp the txn's own cost there,
    which is why the persistent client exists.
A third row per member drops the compare of the entry key's absence (the
leader key's create revision only). Prints etcd's CPU per txn (all three members, and the member addressed)
and the gateway's wall time per txn, the load beside each figure.
"""
import argparse
import base64
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from ha_cluster import Etcd  # noqa: E402

ETCDCTL = os.environ.get("ETCDCTL", "etcdctl")


def cpu(p):
    try:
        fields = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return 0.0


def cpus(etcd):
    return [cpu(p) for p in etcd.procs]


def load():
    return f"load {os.getloadavg()[0]:.1f}"


def b64(b):
    return base64.b64encode(b).decode()


def status(etcd, i):
    st, body = etcd.post(i, "/v3/maintenance/status", b"{}")
    doc = json.loads(body)
    return doc["header"]["member_id"], doc["leader"]


def leader_and_follower(etcd):
    for i in range(len(etcd.names)):
        me, leader = status(etcd, i)
        if me == leader:
            return i, (i + 1) % len(etcd.names)
    raise RuntimeError("no etcd leader")


def gateway_txns(etcd, member, n, value, fence_rev, tag):
    conn = http.client.HTTPConnection("127.0.0.1", etcd.client_ports[member], timeout=10)
    t0 = time.monotonic()
    for k in range(n):
        key = f"cost/{tag}/{k:020d}".encode()
        body = json.dumps({
            "compare": [{"key": b64(b"cost/leader"), "result": "EQUAL", "target": "CREATE",
                         "create_revision": str(fence_rev)},
                        {"key": b64(key), "result": "EQUAL", "target": "CREATE",
                         "create_revision": "0"}],
            "success": [{"requestPut": {"key": b64(key), "value": b64(value)}}]})
        conn.request("POST", "/v3/kv/txn", body, {"Content-Type": "application/json"})
        reply = json.loads(conn.getresponse().read())
        if not reply.get("succeeded"):
            raise RuntimeError(f"txn refused: {reply}")
    conn.close()
    return (time.monotonic() - t0) / n


def etcdctl(etcd, member, args, stdin=None):
    r = subprocess.run([ETCDCTL, f"--endpoints=127.0.0.1:{etcd.client_ports[member]}"] + args,
                       input=stdin, capture_output=True, env=dict(os.environ, ETCDCTL_API="3"),
                       timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"etcdctl {args}: {r.stderr.decode()}")
    return r.stdout


def grpc_txns(etcd, member, n, value, fence_rev, tag):
    text = b64(value)
    for k in range(n):
        key = f"cost/{tag}/{k:020d}"
        out = etcdctl(etcd, member, ["txn"], stdin=(
            f'c("cost/leader") = "{fence_rev}"\nc("{key}") = "0"\n\n'
            f'put {key} {text}\n\n\n').encode())
        if not out.startswith(b"SUCCESS"):
            raise RuntimeError(f"etcdctl txn refused: {out[:200]}")


# ---- a minimal gRPC client: HTTP/2 frames by hand, protobuf by hand ----
# Just enough for unary calls to etcd on one connection: literal HPACK
# headers (no Huffman, no table), response headers skipped, DATA collected
# until the stream ends, PINGs and SETTINGS acknowledged, windows refilled.

def pb_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_field(num, value):
    if isinstance(value, int):
        return pb_varint(num << 3) + pb_varint(value)
    return pb_varint(num << 3 | 2) + pb_varint(len(value)) + value


def pb_top_fields(msg):
    """{field number: value} of a message's top-level varint and bytes fields."""
    out, i = {}, 0

    def varint():
        nonlocal i
        n = shift = 0
        while True:
            b = msg[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n
    while i < len(msg):
        key = varint()
        if key & 7 == 0:
            out[key >> 3] = varint()
        elif key & 7 == 2:
            length = varint()
            out[key >> 3] = msg[i:i + length]
            i += length
        else:
            raise ValueError(f"wire type {key & 7}")
    return out


def txn_request(key, value, fence_rev, absent_compare=True):
    # etcdserverpb.Compare: result 1 (EQUAL 0), target 2 (CREATE 1), key 3,
    # create_revision 5. RequestOp: request_put 2 (PutRequest: key 1, value 2).
    fence = pb_field(2, 1) + pb_field(3, b"cost/leader") + pb_field(5, fence_rev)
    absent = pb_field(2, 1) + pb_field(3, key)  # create_revision 0: the default
    put = pb_field(2, pb_field(1, key) + pb_field(2, value))
    return pb_field(1, fence) + (pb_field(1, absent) if absent_compare else b"") + \
        pb_field(2, put)


class Grpc:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port = port
        self.stream = 1
        self.buf = b""
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + self.frame(4, 0, 0, b""))

    @staticmethod
    def frame(kind, flags, stream, payload):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
            struct.pack(">I", stream) + payload

    @staticmethod
    def header(name, value):
        return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value

    def read_frame(self):
        while len(self.buf) < 9:
            self.buf += self.sock.recv(65536)
        length = int.from_bytes(self.buf[:3], "big")
        while len(self.buf) < 9 + length:
            self.buf += self.sock.recv(65536)
        kind, flags = self.buf[3], self.buf[4]
        stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
        payload = self.buf[9:9 + length]
        self.buf = self.buf[9 + length:]
        return kind, flags, stream, payload

    def call(self, path, message):
        sid = self.stream
        self.stream += 2
        hdrs = b"".join(self.header(n, v) for n, v in (
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", path),
            (b":authority", f"127.0.0.1:{self.port}".encode()),
            (b"content-type", b"application/grpc"), (b"te", b"trailers")))
        body = b"\x00" + struct.pack(">I", len(message)) + message
        if len(body) > 65535:  # the peer's initial flow-control window; no waiting for more here
            raise ValueError(f"a gRPC message of {len(message)} B is past this client's 64 KiB")
        # DATA frames of at most 16 KiB (HTTP/2's default SETTINGS_MAX_FRAME_SIZE),
        # END_STREAM on the last.
        chunks = [body[i:i + 16384] for i in range(0, len(body), 16384)]
        self.sock.sendall(self.frame(1, 4, sid, hdrs) + b"".join(
            self.frame(0, 1 if i == len(chunks) - 1 else 0, sid, c) for i, c in enumerate(chunks)))
        data = b""
        while True:
            kind, flags, stream, payload = self.read_frame()
            if kind == 4 and not flags & 1:    # SETTINGS: acknowledge
                self.sock.sendall(self.frame(4, 1, 0, b""))
            elif kind == 6 and not flags & 1:  # PING: answer
                self.sock.sendall(self.frame(6, 1, 0, payload))
            elif kind == 0 and stream == sid:  # DATA: refill both windows
                data += payload
                if payload:
                    inc = struct.pack(">I", len(payload))
                    self.sock.sendall(self.frame(8, 0, 0, inc) + self.frame(8, 0, sid, inc))
            elif kind == 3 and stream == sid:  # RST_STREAM
                raise RuntimeError(f"gRPC stream reset: {payload.hex()}")
            if stream == sid and flags & 1 and kind in (0, 1):  # END_STREAM
                return data[5:]


def grpc_persistent_txns(etcd, member, n, value, fence_rev, tag, absent_compare=True):
    g = Grpc(etcd.client_ports[member])
    t0 = time.monotonic()
    for k in range(n):
        key = f"cost/{tag}/{k:020d}".encode()
        reply = g.call(b"/etcdserverpb.KV/Txn", txn_request(key, value, fence_rev,
                                                             absent_compare))
        if pb_top_fields(reply).get(2) != 1:  # TxnResponse.succeeded
            raise RuntimeError(f"gRPC txn refused or failed: {reply.hex()}")
    g.sock.close()
    return (time.monotonic() - t0) / n


def dials(etcd, member, n):
    for _ in range(n):
        etcdctl(etcd, member, ["get", "--consistency=s", "cost/leader"])


def measure(etcd, what, fn):
    c0 = cpus(etcd)
    wall = fn()
    c1 = cpus(etcd)
    return [b - a for a, b in zip(c0, c1)], wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=300)
    ap.add_argument("--value-bytes", type=int, default=2048,
                    help="bytes of each txn's put, 1 to 65000 (the gRPC client below "
                         "sends within etcd's initial 64 KiB window)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--etcdctl", action="store_true",
                    help="also `etcdctl txn`, one process per txn (its dial dominates)")
    args = ap.parse_args()
    if not 1 <= args.value_bytes <= 65000:
        ap.error(f"--value-bytes must be 1 to 65000, not {args.value_bytes}")
    n = args.txns
    value = os.urandom(args.value_bytes)
    etcd = Etcd(members=3)
    try:
        leader, follower = leader_and_follower(etcd)
        st, body = etcd.post(leader, "/v3/kv/put",
                             json.dumps({"key": b64(b"cost/leader"), "value": b64(b"x")}).encode())
        fence = int(json.loads(body)["header"]["revision"])
        print(f"etcd_txn_cost: {n} txns (2 compares, 1 put of {args.value_bytes} B) per row; "
              f"etcd CPU in ms per txn: all 3 members / the member addressed")
        gateway_txns(etcd, follower, 50, value, fence, "warm")  # etcd's start-up is over
        targets = (("raft leader", leader), ("a follower", follower))
        for rnd, (name, m) in enumerate(targets * args.rounds):
            gw, wall = measure(etcd, "gw", lambda: gateway_txns(etcd, m, n, value, fence,
                                                               f"gw{m}-{rnd}"))
            print(f"  gateway to {name:11s}: {sum(gw) * 1000 / n:6.2f} / {gw[m] * 1000 / n:5.2f}"
                  f"   wall {wall * 1000:.2f} ms/txn   {load()}")
            sys.stdout.flush()
            rpc, wall = measure(etcd, "grpc", lambda: grpc_persistent_txns(
                etcd, m, n, value, fence, f"grpc{m}-{rnd}"))
            print(f"  gRPC    to {name:11s}: {sum(rpc) * 1000 / n:6.2f} / {rpc[m] * 1000 / n:5.2f}"
                  f"   wall {wall * 1000:.2f} ms/txn   {load()}")
            sys.stdout.flush()
            one, wall = measure(etcd, "grpc1", lambda: grpc_persistent_txns(
                etcd, m, n, value, fence, f"one{m}-{rnd}", absent_compare=False))
            print(f"  gRPC, the fence compare only: {sum(one) * 1000 / n:6.2f} / "
                  f"{one[m] * 1000 / n:5.2f}   wall {wall * 1000:.2f} ms/txn   {load()}")
            sys.stdout.flush()
            if not args.etcdctl:
                continue
            tx, _ = measure(etcd, "txn", lambda: grpc_txns(etcd, m, n, value, fence,
                                                           f"rpc{m}-{rnd}"))
            base, _ = measure(etcd, "dial", lambda: dials(etcd, m, n))
            own = [a - b for a, b in zip(tx, base)]
            print(f"  etcdctl to {name:11s}: {sum(own) * 1000 / n:6.2f} / {own[m] * 1000 / n:5.2f}"
                  f"   (etcdctl txn {sum(tx) * 1000 / n:.2f} minus a dial and a serializable "
                  f"get {sum(base) * 1000 / n:.2f})   {load()}")
            sys.stdout.flush()
    finally:
        etcd.stop()


if __name__ == "__main__":
    main()
