"""A raw client of a store's data port (wire format: man mooncake-protocol,
DATA PATH), for tests that must send what the real client never would."""
import hashlib
import hmac
import socket
import struct

HELLO = struct.Struct("<IHHQ32s")          # magic, version, flags, segment_bytes, nonce
REQUEST = struct.Struct("<IHHQQQQQQQ32s")  # 96 bytes
REPLY = struct.Struct("<IiQQ")             # magic, status, request_id, length
HELLO_MAGIC, REQUEST_MAGIC, REPLY_MAGIC = 0x4854434D, 0x5154434D, 0x5254434D
WRITE, READ, AUTH = 1, 2, 3
INVALID_WRITE, INVALID_READ, AUTH_FAILED = -700, -701, -902
NO_GRANT = (0, 0, 0, 0, b"\0" * 32)   # offset, size, expiry, term, mac


class DataPort:
    """One connection; `hello` holds the store's greeting."""

    def __init__(self, endpoint, timeout=10):
        host, port = endpoint.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.next_id = 1
        magic, self.version, self.flags, self.segment_bytes, self.nonce = HELLO.unpack(
            self.recv(HELLO.size))
        assert magic == HELLO_MAGIC, hex(magic)

    def close(self):
        self.sock.close()

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the store")
            buf += chunk
        return buf

    def request(self, op, offset, length, grant=NO_GRANT, payload=b""):
        """Sends one request; returns (status, body bytes)."""
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(REQUEST.pack(REQUEST_MAGIC, op, 0, rid, offset, length, *grant) + payload)
        magic, status, got_id, n = REPLY.unpack(self.recv(REPLY.size))
        assert magic == REPLY_MAGIC, hex(magic)
        return status, self.recv(n)

    def auth(self, token):
        mac = hmac.new(token.encode(), b"mooncake-transfer-auth-v1" + self.nonce,
                       hashlib.sha256).digest()
        return self.request(AUTH, 0, 32, NO_GRANT, mac)


def grant_of(buf):
    """The wire grant fields of one buffer from `mooncake get --print-grants`."""
    return (buf["offset"], buf["size"], buf["expiry_unix_ms"], buf.get("term", 0),
            bytes.fromhex(buf["capability"]))
