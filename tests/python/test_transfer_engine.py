"""mooncake.engine.TransferEngine between two processes: this one and a
peer (te_peer.py) started per test and stopped by pid. Peers are named
host:rpc_port (P2PHANDSHAKE) or found through the cluster's HTTP metadata
server. Return conventions are the reference's: 0 / -1, batch ids (0 on a
failed submission), transfer_check_status 1 / 0 / -1."""
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from mooncake.engine import TransferEngine

sys.path.insert(0, os.path.dirname(__file__))
from te_peer import peer_pattern  # noqa: E402

PEER_BYTES = 8 << 20
MIB4 = 4 << 20
# Bound on how long a peer may take to come up, and a test on a dead peer.
START_TIMEOUT_S = 30
# The least MC_TRANSFER_TIMEOUT the engine takes (the reference's floor).
TRANSFER_TIMEOUT_S = 5


class Peer:
    def __init__(self, local_hostname="127.0.0.1", metadata="P2PHANDSHAKE", env=None):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(__file__), "te_peer.py"),
             local_hostname, metadata, str(PEER_BYTES)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=env)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"peer did not start: {line}"
        self.name, self.addr = line[1], int(line[2])

    def sha(self, off, n):
        self.proc.stdin.write(f"sha {off} {n}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def plain(self, size):
        """A buffer of `size` bytes the peer registers that is not managed."""
        self.proc.stdin.write(f"plain {size}\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def sha_at(self, addr, n):
        self.proc.stdin.write(f"sha_at {addr} {n}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=START_TIMEOUT_S)


@pytest.fixture
def peer():
    p = Peer()
    yield p
    p.stop()


def make_engine(same_host=True):
    os.environ["MC_TRANSFER_TIMEOUT"] = str(TRANSFER_TIMEOUT_S)
    os.environ.pop("MOONCAKE_AUTH_TOKEN", None)
    os.environ["MC_TE_SAME_HOST"] = "1" if same_host else "0"
    try:
        e = TransferEngine()
        assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
    finally:
        os.environ.pop("MC_TE_SAME_HOST", None)
    assert e.get_rpc_port() > 0
    return e


@pytest.fixture
def te():
    return make_engine()


# The peer runs on this host: "shm" copies into its memory directly, "tcp"
# (MC_TE_SAME_HOST=0) goes through its rpc port. Each test checks the path.
@pytest.fixture(params=["shm", "tcp"])
def te_path(request):
    return make_engine(same_host=request.param == "shm"), request.param


def moved_only_by(e, path, nbytes):
    stats = e.get_transfer_path_stats()
    assert set(stats) == {path}, stats
    assert stats[path]["bytes"] == nbytes
    return stats[path]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_bytes(size, seed):
    return bytes((i * seed + 1) & 0xFF for i in range(256)) * (size // 256)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def test_a_sync_write_lands_in_the_peer_and_a_sync_read_brings_its_bytes(te_path, peer):
    te, path = te_path
    buf = te.allocate_managed_buffer(MIB4)
    data = local_bytes(MIB4, 7)
    assert te.write_bytes_to_buffer(buf, data, MIB4) == 0
    assert te.transfer_sync_write(peer.name, buf, peer.addr + 4096, MIB4) == 0
    assert peer.sha(4096, MIB4) == sha(data)
    # The peer's untouched tail still holds its own pattern; read it back.
    tail = PEER_BYTES - MIB4 - 4096
    assert te.transfer_sync_read(peer.name, buf, peer.addr + 4096 + MIB4, tail) == 0
    assert te.read_bytes_from_buffer(buf, tail) == peer_pattern(PEER_BYTES)[4096 + MIB4:]
    assert te.free_managed_buffer(buf, MIB4) == 0
    stats = moved_only_by(te, path, MIB4 + tail)
    if path == "shm":  # the peer's buffer is managed: mapped, not process_vm
        assert stats["mapped_requests"] == 2 and stats["process_vm_requests"] == 0


def test_batches_of_small_pieces_move_each_piece_to_its_own_place(te_path, peer):
    te, path = te_path
    n, piece = 32, 4096
    buf = te.allocate_managed_buffer(n * piece)
    data = local_bytes(n * piece, 3)
    te.write_bytes_to_buffer(buf, data, len(data))
    # Piece i goes to slot n-1-i on the peer: order is by the addresses given.
    srcs = [buf + i * piece for i in range(n)]
    dsts = [peer.addr + (n - 1 - i) * piece for i in range(n)]
    assert te.batch_transfer_sync_write(peer.name, srcs, dsts, [piece] * n) == 0
    expect = b"".join(data[(n - 1 - i) * piece:(n - i) * piece] for i in range(n))
    assert peer.sha(0, n * piece) == sha(expect)
    back = te.allocate_managed_buffer(n * piece)
    assert te.batch_transfer_sync_read(peer.name, [back + i * piece for i in range(n)],
                                       dsts, [piece] * n) == 0
    assert te.read_bytes_from_buffer(back, n * piece) == data
    assert te.batch_transfer_sync_write(peer.name, srcs, dsts[:-1], [piece] * n) == -1
    moved_only_by(te, path, 2 * n * piece)


def test_async_batches_and_submitted_writes_finish_with_their_status(te_path, peer):
    te, path = te_path
    buf = te.allocate_managed_buffer(MIB4)
    data = local_bytes(MIB4, 11)
    te.write_bytes_to_buffer(buf, data, MIB4)
    half = MIB4 // 2
    w = te.batch_transfer_async_write(peer.name, [buf, buf + half],
                                      [peer.addr, peer.addr + half], [half, half])
    assert w != 0
    assert te.get_batch_transfer_status([w]) == 0
    assert peer.sha(0, MIB4) == sha(data)
    r = te.batch_transfer_async_read(peer.name, [buf], [peer.addr + MIB4], [MIB4])
    assert r != 0 and te.get_batch_transfer_status([r]) == 0
    assert te.read_bytes_from_buffer(buf, MIB4) == peer_pattern(PEER_BYTES)[MIB4:2 * MIB4]
    bid = te.transfer_submit_write(peer.name, buf, peer.addr, 4096)
    assert bid != 0
    deadline = time.monotonic() + START_TIMEOUT_S
    status = 0
    while status == 0 and time.monotonic() < deadline:
        status = te.transfer_check_status(bid)
    assert status == 1
    # Outside the peer's registered memory: the batch fails.
    bad = te.transfer_submit_write(peer.name, buf, peer.addr + PEER_BYTES, 4096)
    while (status := te.transfer_check_status(bad)) == 0 and time.monotonic() < deadline:
        pass
    assert status == -1
    moved_only_by(te, path, 2 * MIB4 + 4096)


def test_registered_memory_that_is_not_a_managed_buffer_is_reached_too(te_path, peer):
    te, path = te_path
    plain = peer.plain(1 << 20)
    buf = te.allocate_managed_buffer(1 << 20)
    data = local_bytes(1 << 20, 13)
    te.write_bytes_to_buffer(buf, data, len(data))
    assert te.transfer_sync_write(peer.name, buf, plain, len(data)) == 0
    assert peer.sha_at(plain, len(data)) == sha(data)
    stats = moved_only_by(te, path, len(data))
    if path == "shm":  # not a memfd: the kernel copies between the processes
        assert stats["process_vm_requests"] == 1 and stats["mapped_requests"] == 0


def test_memory_the_peer_did_not_register_is_refused(te, peer):
    buf = te.allocate_managed_buffer(8192)
    assert te.transfer_sync_write(peer.name, buf, peer.addr + PEER_BYTES - 4096, 8192) == -1
    assert te.transfer_sync_read(peer.name, buf, 4096, 16) == -1
    assert peer.sha(PEER_BYTES - 4096, 4096) == sha(peer_pattern(PEER_BYTES)[-4096:])


def test_registering_memory_follows_the_reference_returns(te):
    bufs = [te.allocate_managed_buffer(1 << 20) for _ in range(2)]
    # Managed buffers are registered already: registering again overlaps.
    assert te.register_memory(bufs[0], 1 << 20) == -1
    assert te.batch_unregister_memory(bufs) == 0
    assert te.batch_register_memory(bufs, [1 << 20, 1 << 20]) == 0
    assert te.unregister_memory(bufs[1]) == 0
    assert te.unregister_memory(bufs[1]) == -1
    assert te.batch_register_memory(bufs, [1 << 20]) == -1


def test_a_killed_peer_fails_transfers_within_the_transfer_timeout(te, peer):
    buf = te.allocate_managed_buffer(MIB4)
    assert te.transfer_sync_write(peer.name, buf, peer.addr, MIB4) == 0
    peer.stop()
    t0 = time.monotonic()
    assert te.transfer_sync_write(peer.name, buf, peer.addr, MIB4) == -1
    assert te.transfer_sync_read(peer.name, buf, peer.addr, 4096) == -1
    bid = te.batch_transfer_async_write(peer.name, [buf], [peer.addr], [4096])
    assert bid == 0 or te.get_batch_transfer_status([bid]) == -1
    assert time.monotonic() - t0 < TRANSFER_TIMEOUT_S


def test_a_stalled_peer_fails_a_transfer_within_the_transfer_timeout(te, peer):
    buf = te.allocate_managed_buffer(MIB4)
    assert te.transfer_sync_write(peer.name, buf, peer.addr, MIB4) == 0
    os.kill(peer.proc.pid, signal.SIGSTOP)
    wait_stopped(peer.proc.pid)
    try:
        t0 = time.monotonic()
        # More than the socket buffers hold, so the writer has to wait on the peer.
        rc = te.batch_transfer_sync_write(peer.name, [buf] * 2, [peer.addr, peer.addr + MIB4],
                                          [MIB4, MIB4])
        elapsed = time.monotonic() - t0
    finally:
        os.kill(peer.proc.pid, signal.SIGCONT)
    assert rc == -1
    assert elapsed < TRANSFER_TIMEOUT_S * 2 + 1


def wait_stopped(pid):
    """Until every thread of `pid` is stopped: SIGSTOP lands asynchronously,
    and a copy on this host finishes in the meantime if it can."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        if all(s == "T" for s in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} did not stop")


def test_peers_find_each_other_through_the_http_metadata_server(cluster):
    url = f"http://127.0.0.1:{cluster.meta_port}/metadata"
    # The name is the host peers connect to; its port is the one the peer binds.
    name = f"127.0.0.1:{free_port()}"
    p = Peer(local_hostname=name, metadata=url)
    try:
        assert p.name == name
        e = TransferEngine()
        assert e.initialize("127.0.0.1", url, "tcp", "") == 0
        buf = e.allocate_managed_buffer(65536)
        e.write_bytes_to_buffer(buf, local_bytes(65536, 5), 65536)
        assert e.transfer_sync_write(name, buf, p.addr, 65536) == 0
        assert p.sha(0, 65536) == sha(local_bytes(65536, 5))
        assert e.transfer_sync_write(f"127.0.0.1:{free_port()}", buf, p.addr, 16) == -1
        del e
    finally:
        p.stop()


def test_calls_before_initialize_and_unknown_metadata_fail_with_minus_one():
    e = TransferEngine()
    assert e.get_rpc_port() == -1
    assert e.register_memory(4096, 4096) == -1
    assert e.transfer_sync_write("127.0.0.1:1", 4096, 4096, 16) == -1
    assert e.batch_transfer_async_read("127.0.0.1:1", [4096], [4096], [16]) == 0
    assert e.allocate_managed_buffer(4096) == 0
    assert e.initialize("127.0.0.1", "etcd://127.0.0.1:2379", "tcp", "") == -1
    assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "nvlink", "") == -1
    if not (os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband")):
        # rdma needs a NIC (the soft-RoCE guest suite runs it with one)
        assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "rdma", "") == -1


def test_a_peer_with_the_cluster_token_serves_only_engines_that_hold_it(te):
    p = Peer(env=dict(os.environ, MOONCAKE_AUTH_TOKEN="te-t0ken"))
    try:
        buf = te.allocate_managed_buffer(4096)
        assert te.transfer_sync_write(p.name, buf, p.addr, 4096) == -1
        os.environ["MOONCAKE_AUTH_TOKEN"] = "te-t0ken"
        e = TransferEngine()
        assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
        b = e.allocate_managed_buffer(4096)
        e.write_bytes_to_buffer(b, b"\x42" * 4096, 4096)
        assert e.transfer_sync_write(p.name, b, p.addr, 4096) == 0
        assert p.sha(0, 4096) == sha(b"\x42" * 4096)
    finally:
        os.environ.pop("MOONCAKE_AUTH_TOKEN", None)
        p.stop()


def test_a_peer_restarted_on_another_port_is_found_again_through_the_metadata_server(cluster):
    url = f"http://127.0.0.1:{cluster.meta_port}/metadata"
    # A name without a port: each start binds a free port and publishes it.
    first = Peer(local_hostname="localhost", metadata=url)
    second = None
    try:
        e = TransferEngine()
        assert e.initialize("127.0.0.1", url, "tcp", "") == 0
        buf = e.allocate_managed_buffer(65536)
        e.write_bytes_to_buffer(buf, local_bytes(65536, 9), 65536)
        assert e.transfer_sync_write("localhost", buf, first.addr, 65536) == 0
        first.stop()
        second = Peer(local_hostname="localhost", metadata=url)
        # The cached port refuses; the name is looked up again and the
        # transfer goes to where the peer lives now, in the same call.
        assert e.transfer_sync_write("localhost", buf, second.addr, 65536) == 0
        assert second.sha(0, 65536) == sha(local_bytes(65536, 9))
        del e
    finally:
        first.stop()
        if second is not None:
            second.stop()
