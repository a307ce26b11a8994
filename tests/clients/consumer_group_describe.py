"""ConsumerGroupDescribe (API key 69, v0) spoken over a raw socket, for the KIP-848 tests.

The clients' admin APIs do not show what a consumer-protocol member sent the broker (its
SubscribedTopicNames versus SubscribedTopicRegex), the group epochs or the assignor in use; this
request does, so the tests can tell a regex resolved by the broker from names resolved by the
client. Encoding follows Kafka's ConsumerGroupDescribe{Request,Response}.json (flexible from v0:
request header v2, response header v1, compact strings and arrays, empty tagged-field sections).
"""

from __future__ import annotations

import socket
import struct
import uuid
from dataclasses import dataclass, field

API_KEY = 69
API_VERSION = 0
CLIENT_ID = "strata-test-cgd"


@dataclass
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    # topic name -> sorted partitions
    assignment: dict[str, list[int]] = field(default_factory=dict)
    target_assignment: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class DescribedGroup:
    error_code: int
    error_message: str | None
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[DescribedMember]


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"response truncated at byte {self.pos} (wanted {n} more of {len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def compact_array(self, item) -> list:
        n = self.uvarint()
        return [] if n == 0 else [item() for _ in range(n - 1)]

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _compact_string(s: str) -> bytes:
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def encode_request(correlation_id: int, group_ids: list[str]) -> bytes:
    """The framed request: header v2 (client id is a classic nullable string) and body v0."""
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", API_KEY, API_VERSION, correlation_id, len(client)) + client + b"\x00"
    body = _uvarint(len(group_ids) + 1) + b"".join(_compact_string(g) for g in group_ids)
    body += b"\x00"  # IncludeAuthorizedOperations = false
    body += b"\x00"  # tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _assignment(r: _Reader) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}

    def topic() -> None:
        r.uuid()
        name = r.compact_string() or ""
        out[name] = sorted(r.compact_array(r.int32))
        r.tagged_fields()

    r.compact_array(topic)
    r.tagged_fields()
    return out


def _member(r: _Reader) -> DescribedMember:
    m = DescribedMember(
        member_id=r.compact_string() or "", instance_id=r.compact_string(), rack_id=r.compact_string(),
        member_epoch=r.int32(), client_id=r.compact_string() or "", client_host=r.compact_string() or "",
        subscribed_topic_names=r.compact_array(lambda: r.compact_string() or ""),
        subscribed_topic_regex=r.compact_string())
    m.assignment = _assignment(r)
    m.target_assignment = _assignment(r)
    r.tagged_fields()
    return m


def _group(r: _Reader) -> DescribedGroup:
    g = DescribedGroup(
        error_code=r.int16(), error_message=r.compact_string(), group_id=r.compact_string() or "",
        state=r.compact_string() or "", group_epoch=r.int32(), assignment_epoch=r.int32(),
        assignor=r.compact_string() or "", members=r.compact_array(lambda: _member(r)))
    r.int32()  # AuthorizedOperations
    r.tagged_fields()
    return g


def decode_response(frame: bytes, correlation_id: int) -> list[DescribedGroup]:
    """Decodes a response frame without its length prefix."""
    r = _Reader(frame)
    got = r.int32()
    if got != correlation_id:
        raise ValueError(f"correlation id {got}, expected {correlation_id}")
    r.tagged_fields()
    r.int32()  # ThrottleTimeMs
    groups = r.compact_array(lambda: _group(r))
    r.tagged_fields()
    if r.pos != len(frame):
        raise ValueError(f"{len(frame) - r.pos} bytes left over after the response")
    return groups


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def describe(bootstrap: str, group_id: str, timeout_s: float = 10.0) -> DescribedGroup:
    """Describes one group at `bootstrap`, which must be its coordinator (a single-broker test)."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(encode_request(1, [group_id]))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        groups = decode_response(_recv_exact(sock, size), 1)
    if len(groups) != 1 or groups[0].group_id != group_id:
        raise ValueError(f"asked for {group_id!r}, got {[g.group_id for g in groups]}")
    return groups[0]
