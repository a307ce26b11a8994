"""A loopback TCP proxy with a "cut" switch: the network partition of the replication fault suite.

Each broker of the fault suite advertises its proxy's port (`advertised.listeners`), so clients and
the other brokers' replica fetchers reach it only through the proxy. `cut()` closes every
connection through the proxy and blackholes new ones (accepted, never forwarded, never answered,
as packets dropped by a partition) until `heal()`.

A Kafka proxy also reads the client id from the first request header of each connection, so a
partition can be made symmetric: cutting broker N off also drops, at every other broker's proxy,
the connections whose client id says they come from broker N (its replica fetchers), and
blackholes new ones (`ban`/`unban`).

The same class without `kafka=True` forwards raw bytes (the etcd gRPC connection of one broker),
so a broker can be cut off from etcd too.

No production code path exists for tests: the brokers run unchanged.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Callable

CHUNK = 1 << 16
CONNECT_TIMEOUT_S = 10.0


class _Connection:
    def __init__(self, client: socket.socket, server: socket.socket | None):
        self.client = client
        self.server = server
        self.client_id: str | None = None  # from the first request (Kafka proxies only)


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _client_id(frame: bytes) -> str | None:
    """The client id of a request frame (size, api_key, api_version, correlation_id, then the
    client id as an int16-length string in every request header version that has one)."""
    if len(frame) < 14:
        return None
    (n,) = struct.unpack_from(">h", frame, 12)
    if n < 0:
        return None
    return frame[14:14 + n].decode(errors="replace")


def _shut(s: socket.socket | None) -> None:
    if s is None:
        return
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


class CutProxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<upstream()>; `upstream` is asked per connection, so
    the broker behind may restart."""

    def __init__(self, upstream: Callable[[], int], name: str, kafka: bool = True):
        self.upstream = upstream
        self.name = name
        self.kafka = kafka
        self._lock = threading.Lock()  # guards every field below
        self._connections: set[_Connection] = set()
        self._blackholed: set[socket.socket] = set()
        self._cut = False
        self._banned: Callable[[str], bool] | None = None
        self._closed = False
        self.connections = 0
        self.dropped = 0
        self.refused_banned = 0  # connections closed or blackholed because their client id was banned
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept_loop, name=f"cut-proxy-{name}", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def is_cut(self) -> bool:
        with self._lock:
            return self._cut

    # --- switches ------------------------------------------------------------------------------

    def cut(self) -> None:
        """Close every connection; blackhole new ones until `heal`."""
        with self._lock:
            self._cut = True
            doomed = list(self._connections)
            self._connections.clear()
            self.dropped += len(doomed)
        for c in doomed:
            _shut(c.client)
            _shut(c.server)

    def ban(self, banned: Callable[[str], bool]) -> None:
        """Close the connections whose client id `banned` matches and blackhole new ones that
        introduce themselves with such an id, until `unban`. Kafka proxies only."""
        assert self.kafka, "only a Kafka proxy knows its connections' client ids"
        with self._lock:
            self._banned = banned
            doomed = [c for c in self._connections if c.client_id is not None and banned(c.client_id)]
            self._connections.difference_update(doomed)
            self.dropped += len(doomed)
            self.refused_banned += len(doomed)
        for c in doomed:
            _shut(c.client)
            _shut(c.server)

    def unban(self) -> None:
        with self._lock:
            self._banned = None

    def heal(self) -> None:
        """Forward again; connections held in the blackhole are closed (their peers reconnect)."""
        with self._lock:
            self._cut = False
            self._banned = None
            held = list(self._blackholed)
            self._blackholed.clear()
        for s in held:
            _shut(s)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            doomed = list(self._connections)
            self._connections.clear()
            held = list(self._blackholed)
            self._blackholed.clear()
        _shut(self._listener)
        for c in doomed:
            _shut(c.client)
            _shut(c.server)
        for s in held:
            _shut(s)

    # --- forwarding ----------------------------------------------------------------------------

    def _blackhole(self, client: socket.socket) -> None:
        """Hold the socket open and never read or answer it (until `heal` or `close`)."""
        with self._lock:
            if not self._closed:
                self._blackholed.add(client)
                return
        _shut(client)

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    _shut(client)
                    return
                cut = self._cut
            if cut:
                self._blackhole(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream()), timeout=CONNECT_TIMEOUT_S)
                server.settimeout(None)
            except OSError:
                _shut(client)  # broker down: refused, as a client connecting to it directly would be
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(client, server)
            with self._lock:
                self.connections += 1
                self._connections.add(conn)
            threading.Thread(target=self._requests, args=(conn,), daemon=True).start()
            threading.Thread(target=self._pump, args=(conn, conn.server, conn.client), daemon=True).start()

    def _forget(self, conn: _Connection) -> None:
        with self._lock:
            self._connections.discard(conn)
        _shut(conn.client)
        _shut(conn.server)

    def _requests(self, conn: _Connection) -> None:
        if not self.kafka:
            self._pump(conn, conn.client, conn.server)
            return
        # The first frame carries the client id; the rest is forwarded as raw bytes.
        head = _read_exact(conn.client, 4)
        body = None if head is None else _read_exact(conn.client, max(struct.unpack(">i", head)[0], 0))
        if body is None:
            self._forget(conn)
            return
        frame = head + body
        conn.client_id = _client_id(frame)
        with self._lock:
            banned = self._banned is not None and conn.client_id is not None and self._banned(conn.client_id)
            if banned:
                self._connections.discard(conn)
                self.refused_banned += 1
        if banned:
            _shut(conn.server)
            self._blackhole(conn.client)
            return
        try:
            conn.server.sendall(frame)
        except OSError:
            self._forget(conn)
            return
        self._pump(conn, conn.client, conn.server)

    def _pump(self, conn: _Connection, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(CHUNK)
            except OSError:
                break
            if not data:
                break
            try:
                dst.sendall(data)
            except OSError:
                break
        self._forget(conn)
