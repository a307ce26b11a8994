"""A loopback Kafka proxy that records every Fetch (key 1) going through it: the request's
session id, session epoch and the partitions it lists, and the answer's error, session id and
the partitions it lists. The broker advertises the proxy's port (`advertised.listeners`), so a
client reaches the broker only through it: what the test asserts is what went over the wire,
not what a client says it did.

Fetch versions 4-16 are parsed (Kafka's FetchRequest/FetchResponse schemas); other requests are
forwarded untouched.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field


@dataclass
class FetchExchange:
    """One Fetch request and (once answered) its response."""
    client_id: str
    version: int
    session_id: int
    epoch: int
    # (topic name or topic id hex, partition, fetch offset) per listed partition
    partitions: list[tuple[str, int, int]]
    forgotten: int
    response_error: int | None = None
    response_session_id: int | None = None
    # (topic, partition, records bytes) per partition the response lists
    response_partitions: list[tuple[str, int, int]] = field(default_factory=list)


class _Reader:
    def __init__(self, data: bytes, pos: int = 0):
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        if len(out) != n:
            raise ValueError("short frame")
        self.pos += n
        return out

    def i8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def i16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def i32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def i64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def array_len(self, flexible: bool) -> int:
        return self.uvarint() - 1 if flexible else self.i32()

    def string(self, flexible: bool) -> str:
        n = self.uvarint() - 1 if flexible else self.i16()
        return "" if n < 0 else self.take(n).decode()

    def tags(self, flexible: bool) -> None:
        if not flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _topic(r: _Reader, version: int, flexible: bool) -> str:
    return r.take(16).hex() if version >= 13 else r.string(flexible)


def parse_fetch_request(frame: bytes) -> FetchExchange | None:
    """A request frame without its size prefix; None unless it is a Fetch."""
    r = _Reader(frame)
    api_key, version = r.i16(), r.i16()
    if api_key != 1:
        return None
    r.i32()  # correlation id
    client_id = r.string(False)
    flexible = version >= 12
    r.tags(flexible)
    if version < 15:
        r.i32()  # replica id
    r.i32(), r.i32(), r.i32(), r.i8()  # max wait, min bytes, max bytes, isolation
    session_id, epoch = r.i32(), r.i32()
    partitions = []
    for _ in range(r.array_len(flexible)):
        topic = _topic(r, version, flexible)
        for _ in range(r.array_len(flexible)):
            partition = r.i32()
            if version >= 9:
                r.i32()  # current leader epoch
            offset = r.i64()
            if version >= 12:
                r.i32()  # last fetched epoch
            r.i64()  # log start offset
            r.i32()  # partition max bytes
            r.tags(flexible)
            partitions.append((topic, partition, offset))
        r.tags(flexible)
    forgotten = 0
    for _ in range(r.array_len(flexible)):
        _topic(r, version, flexible)
        n = r.array_len(flexible)
        r.take(4 * n)
        forgotten += n
        r.tags(flexible)
    return FetchExchange(client_id, version, session_id, epoch, partitions, forgotten)


def parse_fetch_response(frame: bytes, ex: FetchExchange) -> None:
    """Fill in `ex` from its response frame (without the size prefix)."""
    version = ex.version
    flexible = version >= 12
    r = _Reader(frame, 4)  # correlation id
    r.tags(flexible)
    r.i32()  # throttle
    error, session_id = r.i16(), r.i32()
    listed = []
    for _ in range(r.array_len(flexible)):
        topic = _topic(r, version, flexible)
        for _ in range(r.array_len(flexible)):
            partition = r.i32()
            r.i16(), r.i64(), r.i64(), r.i64()  # error, hw, lso, log start
            n = r.array_len(flexible)
            for _ in range(max(n, 0)):
                r.i64(), r.i64()
                r.tags(flexible)
            if version >= 11:
                r.i32()
            size = r.uvarint() - 1 if flexible else r.i32()
            r.take(max(size, 0))
            r.tags(flexible)
            listed.append((topic, partition, max(size, 0)))
        r.tags(flexible)
    # The error last: `snapshot` shows an exchange once its error is set.
    ex.response_partitions = listed
    ex.response_session_id = session_id
    ex.response_error = error


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">i", head)
    body = _read_exact(sock, n)
    return None if body is None else head + body


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 16))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class FetchSniffer:
    """Listens on `port` (127.0.0.1) and forwards each connection to `target_port`."""

    def __init__(self, port: int, target_port: int):
        self.target_port = target_port
        self.exchanges: list[FetchExchange] = []
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", port))
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def snapshot(self) -> list[FetchExchange]:
        """The answered Fetch exchanges so far."""
        with self.lock:
            return [e for e in self.exchanges if e.response_error is not None]

    def close(self) -> None:
        self.closed = True
        for s in [self.server, *self.sockets]:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            self.sockets += [client, server]
            pending: dict[int, FetchExchange] = {}
            threading.Thread(target=self._requests, args=(client, server, pending), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, pending), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, pending: dict) -> None:
        while (frame := _read_frame(client)) is not None:
            ex = parse_fetch_request(frame[4:])
            if ex is not None:
                (corr,) = struct.unpack_from(">i", frame, 8)
                with self.lock:
                    pending[corr] = ex
                    self.exchanges.append(ex)
            try:
                server.sendall(frame)
            except OSError:
                break
        for s in (client, server):
            _shutdown(s)

    def _responses(self, server: socket.socket, client: socket.socket, pending: dict) -> None:
        while (frame := _read_frame(server)) is not None:
            (corr,) = struct.unpack_from(">i", frame, 4)
            with self.lock:
                ex = pending.pop(corr, None)
            if ex is not None:
                parse_fetch_response(frame[4:], ex)
            try:
                client.sendall(frame)
            except OSError:
                break
        for s in (client, server):
            _shutdown(s)


def _shutdown(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
