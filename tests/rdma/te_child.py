"""mooncake.engine.TransferEngine between two processes over RDMA (run by
guest_suite.py in the guest): a peer (tests/python/te_peer.py with protocol
rdma) registers a managed buffer; this process writes and reads it with
one-sided RDMA through the reference's calls (sync, batch, async, submit),
byte for byte, checks that memory the peer did not register is refused and
that the engine's path counts name rdma only. Prints OK on success.
  te_child.py DEVICES"""
import hashlib
import os
import subprocess
import sys
import time

PY_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
sys.path.insert(0, PY_TESTS)
from te_peer import peer_pattern  # noqa: E402

from mooncake.engine import TransferEngine  # noqa: E402

devices = sys.argv[1]
PEER_BYTES, MIB4, PIECE, N = 8 << 20, 4 << 20, 4096, 32
STATUS_TIMEOUT_S = 60


def sha(b):
    return hashlib.sha256(b).hexdigest()


peer = subprocess.Popen([sys.executable, os.path.join(PY_TESTS, "te_peer.py"), "127.0.0.1",
                         "P2PHANDSHAKE", str(PEER_BYTES), "rdma", devices],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def peer_sha(off, n):
    peer.stdin.write(f"sha {off} {n}\n")
    peer.stdin.flush()
    return peer.stdout.readline().strip()


try:
    words = peer.stdout.readline().split()
    assert words and words[0] == "ready", f"peer did not start: {words}"
    name, addr = words[1], int(words[2])
    te = TransferEngine()
    assert te.initialize("127.0.0.1", "P2PHANDSHAKE", "rdma", devices) == 0
    buf = te.allocate_managed_buffer(MIB4)
    data = os.urandom(MIB4)
    assert te.write_bytes_to_buffer(buf, data, MIB4) == 0
    # Sync write, then read back the peer's untouched tail.
    assert te.transfer_sync_write(name, buf, addr + 4096, MIB4) == 0
    assert peer_sha(4096, MIB4) == sha(data), "written bytes differ"
    tail = PEER_BYTES - MIB4 - 4096
    assert te.transfer_sync_read(name, buf, addr + 4096 + MIB4, tail) == 0
    assert te.read_bytes_from_buffer(buf, tail) == peer_pattern(PEER_BYTES)[4096 + MIB4:]
    # A batch of 32 pieces, each to its own (reversed) place, and back.
    te.write_bytes_to_buffer(buf, data, MIB4)
    srcs = [buf + i * PIECE for i in range(N)]
    dsts = [addr + (N - 1 - i) * PIECE for i in range(N)]
    assert te.batch_transfer_sync_write(name, srcs, dsts, [PIECE] * N) == 0
    expect = b"".join(data[(N - 1 - i) * PIECE:(N - i) * PIECE] for i in range(N))
    assert peer_sha(0, N * PIECE) == sha(expect), "batch bytes differ"
    back = te.allocate_managed_buffer(N * PIECE)
    assert te.batch_transfer_sync_read(name, [back + i * PIECE for i in range(N)], dsts,
                                       [PIECE] * N) == 0
    assert te.read_bytes_from_buffer(back, N * PIECE) == data[:N * PIECE]
    # Async: a batch id and its status; a submitted write polled to done.
    half = MIB4 // 2
    bid = te.batch_transfer_async_write(name, [buf, buf + half], [addr, addr + half], [half, half])
    assert bid != 0 and te.get_batch_transfer_status([bid]) == 0
    assert peer_sha(0, MIB4) == sha(data), "async bytes differ"
    bid = te.transfer_submit_write(name, buf, addr, PIECE)
    deadline, status = time.monotonic() + STATUS_TIMEOUT_S, 0
    while status == 0 and time.monotonic() < deadline:
        status = te.transfer_check_status(bid)
    assert status == 1, f"submitted write: {status}"
    # Outside the peer's registered memory: refused, nothing moved.
    assert te.transfer_sync_write(name, buf, addr + PEER_BYTES, PIECE) == -1
    stats = te.get_transfer_path_stats()
    assert set(stats) == {"rdma"}, f"paths {stats}"
    print("OK", stats, flush=True)
finally:
    peer.kill()
    peer.wait()
