"""Guards availability at the connection limit: idle sockets and slow senders must
expire (`connections.max.idle.ms`, `strata.request.receive.timeout.ms`) so that a new
client gets in on its own, and `max.connections.per.ip(.overrides)` must refuse the
connection over an address's limit while other addresses keep connecting.

Before these existed, 1,000 idle sockets (the default `max.connections`) locked every
new client out for good.
"""

from __future__ import annotations

import resource
import socket
import struct
import threading
import time

import pytest
from confluent_kafka import Producer

SERVED_IDLE = 1000  # accepted, one request answered, then silent
QUEUED_IDLE = 1000  # waiting in the listen backlog behind them, then silent
SLOW_SENDERS = 50  # accepted, then one byte of a request a second
IDLE_MS = 1500
PRODUCER_BUDGET_S = 15.0


def _raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"need {wanted} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _closed_by_peer(sock: socket.socket) -> bool:
    """True when the broker has closed `sock` (EOF or reset); never blocks."""
    try:
        data = sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b""


def _api_versions_frame(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, correlation_id, -1)  # ApiVersions v0, null client id
    return struct.pack(">i", len(body)) + body


def _answers(sock: socket.socket, correlation_id: int, timeout: float = 5.0) -> bool:
    """Sends ApiVersions v0; True if the broker answers, False if it closed the socket."""
    sock.settimeout(timeout)
    try:
        sock.sendall(_api_versions_frame(correlation_id))
        size = _read_exactly(sock, 4)
        if size is None:
            return False
        body = _read_exactly(sock, struct.unpack(">i", size)[0])  # read it all: nothing left unread
    except OSError:
        return False
    return body is not None and struct.unpack(">i", body[:4])[0] == correlation_id


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def test_idle_and_slow_connections_expire_and_a_new_producer_gets_in(broker_factory):
    """2,000 idle sockets and 50 slow senders hold every slot and fill the backlog; the
    broker must free the slots by itself so that a new producer gets in within seconds."""
    _raise_fd_limit(SERVED_IDLE + QUEUED_IDLE + SLOW_SENDERS + 512)
    limit = SERVED_IDLE + SLOW_SENDERS
    broker = broker_factory(
        {
            "connections.max.idle.ms": str(IDLE_MS),
            "max.connections": str(limit),
            # Room for the queued clients: past the backlog the kernel answers with
            # SYN cookies, and a client that never sends stays half-open for good.
            "socket.listen.backlog.size": str(QUEUED_IDLE + 100),
        }
    ).start()
    host, port = "127.0.0.1", broker.port

    # Slow senders first, while slots are free: each dribbles a 64-byte request.
    slow = [socket.create_connection((host, port), timeout=30) for _ in range(SLOW_SENDERS)]
    frame = struct.pack(">i", 60) + b"\x00" * 60
    stop = threading.Event()

    def dribble() -> None:
        for i in range(len(frame)):
            for s in slow:
                try:
                    s.send(frame[i : i + 1])
                except OSError:
                    pass
            if stop.wait(1.0):
                return

    dribbler = threading.Thread(target=dribble, daemon=True)
    dribbler.start()
    served: list[socket.socket] = []
    queued: list[socket.socket] = []
    try:
        # Then idle clients that were served once: together they hold every slot.
        for i in range(SERVED_IDLE):
            s = socket.create_connection((host, port), timeout=30)
            served.append(s)
            assert _answers(s, i), f"connection {i} within max.connections was not served"
        # Then idle clients that only wait in the listen backlog.
        for _ in range(QUEUED_IDLE):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((host, port))
            queued.append(s)

        started = time.monotonic()
        delivered: list[object] = []
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "message.timeout.ms": int(PRODUCER_BUDGET_S * 1000),
                "socket.connection.setup.timeout.ms": int(PRODUCER_BUDGET_S * 1000),
            }
        )
        producer.produce("after-the-crowd", b"hello", on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(PRODUCER_BUDGET_S + 5)
        elapsed = time.monotonic() - started
        print(
            f"new producer delivered after {elapsed:.2f}s behind {SERVED_IDLE} served-idle, "
            f"{QUEUED_IDLE} queued-idle and {SLOW_SENDERS} slow sockets (max.connections={limit})"
        )
        assert delivered == [None], f"delivery failed: {delivered}"
        assert elapsed < PRODUCER_BUDGET_S

        # The broker closed every connection it had accepted, on its own.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            open_served = sum(1 for s in served if not _closed_by_peer(s))
            open_slow = sum(1 for s in slow if not _closed_by_peer(s))
            if open_served == 0 and open_slow == 0:
                break
            time.sleep(0.2)
        assert (open_served, open_slow) == (0, 0), f"{open_served} idle and {open_slow} slow sockets still open"
        # The backlog's sockets were accepted once slots freed, and expired in turn.
        while time.monotonic() < deadline:
            open_queued = sum(1 for s in queued if not _closed_by_peer(s))
            if open_queued == 0:
                break
            time.sleep(0.2)
        assert open_queued == 0, f"{open_queued} of {QUEUED_IDLE} sockets from the backlog still open"
    finally:
        stop.set()
        dribbler.join()
        for s in served + queued + slow:
            s.close()
    assert broker.stop() == 0


def _connect_from(source: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def test_max_connections_per_ip_refuses_the_extra_connection_only(broker_factory):
    broker = broker_factory(
        {"max.connections.per.ip": "3", "max.connections.per.ip.overrides": "127.0.0.2:5"}
    ).start()
    port = broker.port
    # broker.start() probed the port from 127.0.0.1; until the broker has seen that
    # probe close, its slot is still taken, so take the three slots with a deadline.
    deadline = time.monotonic() + 10
    while True:
        first = [_connect_from("127.0.0.1", port) for _ in range(3)]
        if all(_answers(s, i) for i, s in enumerate(first)):
            break
        for s in first:
            s.close()
        assert time.monotonic() < deadline, "three connections within the limit were never all served"
        time.sleep(0.05)
    extra = _connect_from("127.0.0.1", port)
    assert not _answers(extra, 99), "the fourth connection from 127.0.0.1 must be closed"

    # The override gives 127.0.0.2 five, independent of 127.0.0.1's count.
    second = [_connect_from("127.0.0.2", port) for _ in range(5)]
    assert all(_answers(s, 10 + i) for i, s in enumerate(second))
    assert not _answers(_connect_from("127.0.0.2", port), 98), "the sixth from 127.0.0.2 must be closed"

    # Closing one gives its slot back.
    first.pop().close()
    deadline = time.monotonic() + 10
    while True:
        again = _connect_from("127.0.0.1", port)
        if _answers(again, 50):
            break
        assert time.monotonic() < deadline, "a released slot was never reused"
        time.sleep(0.1)
    for s in first + second + [extra, again]:
        s.close()
    assert broker.stop() == 0
