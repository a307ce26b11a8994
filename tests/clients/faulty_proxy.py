"""A loopback TCP proxy in front of the broker that breaks Produce exchanges on purpose.

Clients connect to the proxy (the broker advertises the proxy's port via
`advertised.listeners`, so every connection after bootstrap also goes through it). The proxy
reads Kafka frames in both directions, remembers which correlation ids belong to Produce
requests (api key 0), and for every `every`-th Produce request applies one fault, cycling
through:

- ``drop_response``: the request reaches the broker (the records are written), the response is
  swallowed and both sockets are closed. The client must retry the same batch; only the broker's
  duplicate detection keeps it from being written twice.
- ``close_before_forward``: the connection is closed before the request reaches the broker.
  The retry is new data; nothing may be lost.

A third switch, `hold_produce` (an Event), swallows every Produce response while set and keeps
the connection open: the broker has written the records but the client waits. Killing the
broker then closes the connection and the client retries after the restart, so the restarted
broker must recognise the batches from the log alone.

No production code path exists for tests: the broker runs unchanged.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Callable

PRODUCE = 0
FAULTS = ("drop_response", "close_before_forward")


@dataclass
class ProxyStats:
    produce_requests: int = 0
    dropped_responses: int = 0
    closed_before_forward: int = 0
    held_responses: int = 0
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def faults(self) -> int:
        return self.dropped_responses + self.closed_before_forward


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


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    body = _read_exact(sock, size)
    return None if body is None else head + body


class FaultyProxy:
    """Forwards 127.0.0.1:<port> to `upstream()` and breaks every `every`-th Produce exchange.

    `every=0` disables faults. `upstream` is called per connection, so the broker may restart on
    another port behind the proxy.
    """

    def __init__(self, upstream: Callable[[], int], every: int = 0, max_faults: int | None = None):
        self.upstream = upstream
        self.every = every
        self.max_faults = max_faults
        self.stats = ProxyStats()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self.hold_produce = threading.Event()
        self._closed = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept_loop, name="faulty-proxy", daemon=True)
        self._thread.start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed.set()
        try:
            self._listener.close()
        except OSError:
            pass
        with self.stats.lock:
            sockets = list(self._sockets)
        for s in sockets:
            self._shut(s)

    def disconnect_all(self) -> None:
        """Close every open connection (as a broker crash does)."""
        with self.stats.lock:
            sockets = list(self._sockets)
        for s in sockets:
            self._shut(s)

    def _shut(self, s: socket.socket) -> None:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass
        with self.stats.lock:
            self._sockets.discard(s)

    def _next_fault(self) -> str | None:
        """Called for each Produce request; decides its fate."""
        with self.stats.lock:
            self.stats.produce_requests += 1
            n = self.stats.produce_requests
            if self.every <= 0 or n % self.every != 0:
                return None
            if self.max_faults is not None and self.stats.faults >= self.max_faults:
                return None
            fault = FAULTS[(n // self.every) % len(FAULTS)]
            if fault == "drop_response":
                self.stats.dropped_responses += 1
            else:
                self.stats.closed_before_forward += 1
            return fault

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream()), timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.stats.lock:
                self.stats.connections += 1
                self._sockets.update((client, server))
            doomed: set[int] = set()
            held: set[int] = set()
            lock = threading.Lock()
            threading.Thread(target=self._requests, args=(client, server, doomed, held, lock), daemon=True).start()
            threading.Thread(target=self._responses, args=(client, server, doomed, held, lock), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, doomed: set[int], held: set[int],
                  lock: threading.Lock) -> None:
        while True:
            frame = _read_frame(client)
            if frame is None:
                break
            api_key, _version, correlation_id = struct.unpack(">hhi", frame[4:12])
            if api_key == PRODUCE and self.hold_produce.is_set():
                with lock:
                    held.add(correlation_id)
                with self.stats.lock:
                    self.stats.held_responses += 1
            elif api_key == PRODUCE:
                fault = self._next_fault()
                if fault == "close_before_forward":
                    break
                if fault == "drop_response":
                    with lock:
                        doomed.add(correlation_id)
            try:
                server.sendall(frame)
            except OSError:
                break
        self._shut(client)
        self._shut(server)

    def _responses(self, client: socket.socket, server: socket.socket, doomed: set[int], held: set[int],
                   lock: threading.Lock) -> None:
        while True:
            frame = _read_frame(server)
            if frame is None:
                break
            (correlation_id,) = struct.unpack(">i", frame[4:8])
            with lock:
                drop = correlation_id in doomed
                hold = correlation_id in held
            if hold:
                continue
            if drop:
                # The broker wrote the records; the client never hears so and must retry.
                break
            try:
                client.sendall(frame)
            except OSError:
                break
        self._shut(client)
        self._shut(server)
