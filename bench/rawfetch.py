"""A minimal Kafka Fetch loop over a plain socket: sends Fetch v11 requests and discards the records.

It parses only what it needs to advance: the response header, the partition's error code and
high watermark, and each record batch's (baseOffset, batchLength, lastOffsetDelta). This measures
the broker's fetch path (and, for plaintext, its sendfile path) without client-side decoding.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

FETCH_KEY = 1
FETCH_VERSION = 11  # the last non-flexible version: fixed-width header, plain arrays
RECV_CHUNK = 1 << 20


class FetchError(RuntimeError):
    """The broker answered a Fetch with an error code, or the response did not parse."""


@dataclass
class FetchResult:
    bytes_received: int  # whole responses, as they came off the socket
    record_bytes: int  # the records fields only
    requests: int
    seconds: float
    next_offset: int


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def encode_fetch(correlation_id: int, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
    body = b"".join([
        struct.pack(">hhi", FETCH_KEY, FETCH_VERSION, correlation_id),
        _string("strata-rawfetch"),
        # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch
        struct.pack(">iiiibii", -1, 500, 1, max_bytes, 0, 0, -1),
        struct.pack(">i", 1), _string(topic),
        # one partition: index, current_leader_epoch, fetch_offset, log_start_offset, partition_max_bytes
        struct.pack(">iiiqqi", 1, partition, -1, offset, -1, max_bytes),
        struct.pack(">i", 0),  # forgotten_topics_data
        _string(""),  # rack_id
    ])
    return struct.pack(">i", len(body)) + body


def _recv_exact(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:], min(RECV_CHUNK, len(view) - got))
        if n == 0:
            raise FetchError("broker closed the connection")
        got += n


def _parse(buf: memoryview, correlation_id: int) -> tuple[int, int, int, int]:
    """Returns (error_code, high_watermark, records_start, records_len) for the single partition."""
    (corr,) = struct.unpack_from(">i", buf, 0)
    if corr != correlation_id:
        raise FetchError(f"correlation id {corr} != {correlation_id}")
    pos = 4 + 4  # throttle_time_ms
    (top_error, _session, n_topics) = struct.unpack_from(">hii", buf, pos)
    pos += 10
    if top_error != 0:
        raise FetchError(f"Fetch top-level error {top_error}")
    if n_topics != 1:
        raise FetchError(f"expected one topic, got {n_topics}")
    (name_len,) = struct.unpack_from(">h", buf, pos)
    pos += 2 + name_len
    (n_parts,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if n_parts != 1:
        raise FetchError(f"expected one partition, got {n_parts}")
    _index, error, high_watermark, _lso, _log_start, n_aborted = struct.unpack_from(">ihqqqi", buf, pos)
    pos += 4 + 2 + 8 + 8 + 8 + 4
    if n_aborted > 0:
        pos += 16 * n_aborted
    pos += 4  # preferred_read_replica
    (records_len,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    return error, high_watermark, pos, max(records_len, 0)


def _next_offset(buf: memoryview, start: int, length: int, current: int) -> int:
    """The offset after the last complete batch in buf[start:start+length] (current if none)."""
    pos, end, next_offset = start, start + length, current
    while pos + 61 <= end:  # 61 = v2 batch header size
        base_offset, batch_len = struct.unpack_from(">qi", buf, pos)
        if pos + 12 + batch_len > end:
            break  # a partial batch at the end is allowed; the next fetch starts at it
        (last_delta,) = struct.unpack_from(">i", buf, pos + 23)
        next_offset = base_offset + last_delta + 1
        pos += 12 + batch_len
    return next_offset


def fetch_all(host: str, port: int, topic: str, partition: int, end_offset: int,
              max_bytes: int = 8 << 20, timeout_s: float = 120.0) -> FetchResult:
    """Fetches [0, end_offset) and returns what it took."""
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    buf = bytearray(max_bytes + (1 << 20))
    size_buf = bytearray(4)
    offset, received, record_bytes, requests = 0, 0, 0, 0
    start = time.perf_counter()
    deadline = start + timeout_s
    try:
        while offset < end_offset:
            if time.perf_counter() > deadline:
                raise FetchError(f"fetch stalled at offset {offset} of {end_offset}")
            requests += 1
            sock.sendall(encode_fetch(requests, topic, partition, offset, max_bytes))
            _recv_exact(sock, memoryview(size_buf))
            (size,) = struct.unpack(">i", size_buf)
            if size > len(buf):
                buf = bytearray(size)
            view = memoryview(buf)[:size]
            _recv_exact(sock, view)
            received += 4 + size
            error, _hw, rstart, rlen = _parse(view, requests)
            if error != 0:
                raise FetchError(f"Fetch partition error {error} at offset {offset}")
            record_bytes += rlen
            offset = _next_offset(view, rstart, rlen, offset)
    finally:
        sock.close()
    return FetchResult(received, record_bytes, requests, time.perf_counter() - start, offset)
