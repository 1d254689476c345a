"""A TransferEngine peer process for test_transfer_engine.py (run as a script).

  te_peer.py LOCAL_HOSTNAME METADATA SIZE [PROTOCOL DEVICES]
Initializes a mooncake.engine.TransferEngine, allocates a managed buffer of
SIZE bytes filled with peer_pattern(SIZE), prints
"ready <segment name> <buffer address>" and then answers lines on stdin:
  sha OFF LEN   -> the sha256 hex digest of those bytes of its buffer
  plain SIZE    -> registers SIZE bytes it allocated itself (not a managed
                   buffer) and prints their address
  sha_at ADDR LEN -> the sha256 hex digest of LEN bytes at ADDR
  quit          -> exits
"""
import ctypes
import hashlib
import sys

from mooncake.engine import TransferEngine


def peer_pattern(size):
    return bytes((i * 13 + 5) & 0xFF for i in range(256)) * (size // 256) + bytes(size % 256)


def main():
    local_hostname, metadata, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    protocol, devices = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else ("tcp", "")
    te = TransferEngine()
    if te.initialize(local_hostname, metadata, protocol, devices) != 0:
        print("initialize failed", flush=True)
        return 1
    addr = te.allocate_managed_buffer(size)
    te.write_bytes_to_buffer(addr, peer_pattern(size), size)
    name = (f"{local_hostname}:{te.get_rpc_port()}" if metadata == "P2PHANDSHAKE"
            else local_hostname)
    print(f"ready {name} {addr}", flush=True)
    keep = []  # buffers of "plain", alive until exit
    for line in sys.stdin:
        words = line.split()
        if words and words[0] == "sha":
            off, n = int(words[1]), int(words[2])
            print(hashlib.sha256(te.read_bytes_from_buffer(addr + off, n)).hexdigest(), flush=True)
        elif words and words[0] == "plain":
            size = int(words[1])
            plain = ctypes.create_string_buffer(size)
            keep.append(plain)
            assert te.register_memory(ctypes.addressof(plain), size) == 0
            print(ctypes.addressof(plain), flush=True)
        elif words and words[0] == "sha_at":
            addr, n = int(words[1]), int(words[2])
            print(hashlib.sha256(ctypes.string_at(addr, n)).hexdigest(), flush=True)
        elif words and words[0] == "quit":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
