"""A cluster of `strata serve` brokers sharing metadata in etcd, for the cluster tests.

`StrataCluster` holds the brokers the `cluster_factory` fixture started (node ids, ports kept
across restarts) and answers what the tests ask about the cluster. `metadata` sends one
Metadata request to exactly one broker over a raw socket: the clients route metadata
requests to whichever broker they like and cache the answers, while a test about failover
needs to know what a given broker says now.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from broker import StrataBroker

# What every cluster test's brokers run with (cluster_factory): short enough that a dead
# broker's lease expires well within a test's patience.
CLUSTER_SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}

METADATA_TIMEOUT_S = 5.0
MEMBERS_TIMEOUT_S = 30.0

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.1) -> T:
    """Polls `condition` until it returns something truthy and returns that; fails with `what`
    (and the last exception the condition raised, if any) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except Exception as e:  # noqa: BLE001 - a broker that is down answers with an exception
            last_error = e
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}{detail}")
        time.sleep(interval_s)


# --- Metadata v7 over a raw socket --------------------------------------------------------

@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass
class PartitionInfo:
    error: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]


@dataclass
class TopicInfo:
    error: int
    internal: bool
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


@dataclass
class Metadata:
    brokers: dict[int, BrokerInfo]
    cluster_id: str | None
    controller_id: int
    topics: dict[str, TopicInfo]

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition → leader node id (-1: no leader)."""
        return {p: info.leader for p, info in self.topics[topic].partitions.items()}


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        (value,) = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return value

    def string(self) -> str | None:
        n = self.take("h")
        if n < 0:
            return None
        value = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return value

    def int32s(self) -> list[int]:
        return [self.take("i") for _ in range(max(self.take("i"), 0))]


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        out += chunk
    return bytes(out)


def _call(bootstrap: str, api_key: int, version: int, body: bytes, timeout_s: float) -> _Reader:
    """One request (header v1) to the broker at `bootstrap`; returns a reader past the response
    header. Raises OSError when the broker cannot be reached or does not answer in time."""
    correlation_id = 14
    frame = struct.pack(">hhi", api_key, version, correlation_id) + _string("strata-cluster-test") + body
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        payload = _recv_exactly(sock, size)
    r = _Reader(payload)
    assert r.take("i") == correlation_id
    return r


def metadata(bootstrap: str, topics: list[str] | None = None, timeout_s: float = METADATA_TIMEOUT_S) -> Metadata:
    """Metadata v7 from the one broker at `bootstrap` ("host:port"): all topics when `topics` is
    None. Never creates a topic. Raises OSError when the broker cannot be reached."""
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    body += struct.pack(">b", 0)  # allow_auto_topic_creation
    r = _call(bootstrap, 3, 7, body, timeout_s)
    r.take("i")  # throttle_time_ms
    brokers = {}
    for _ in range(r.take("i")):
        b = BrokerInfo(r.take("i"), r.string() or "", r.take("i"), r.string())
        brokers[b.node_id] = b
    cluster_id, controller_id = r.string(), r.take("i")
    result = {}
    for _ in range(r.take("i")):
        error, name, internal = r.take("h"), r.string() or "", bool(r.take("b"))
        topic = TopicInfo(error, internal)
        for _ in range(r.take("i")):
            p_error, index, leader, epoch = r.take("h"), r.take("i"), r.take("i"), r.take("i")
            topic.partitions[index] = PartitionInfo(p_error, leader, epoch, r.int32s(), r.int32s(), r.int32s())
        result[name] = topic
    return Metadata(brokers, cluster_id, controller_id, result)


@dataclass
class TopicResult:
    error: int
    message: str | None


def create_topic_raw(bootstrap: str, name: str, partitions: int, timeout_s: float = 30.0) -> TopicResult:
    """CreateTopics v2 of one topic (replication factor 1) sent to exactly the broker at
    `bootstrap`: its error code (0: created) and message, as that broker answers."""
    body = struct.pack(">i", 1) + _string(name) + struct.pack(">ihii", partitions, 1, 0, 0)
    body += struct.pack(">ib", int(timeout_s * 1000), 0)  # timeout_ms, validate_only
    r = _call(bootstrap, 19, 2, body, timeout_s + 10)
    r.take("i")  # throttle_time_ms
    assert r.take("i") == 1 and r.string() == name
    return TopicResult(r.take("h"), r.string())


@dataclass
class Coordinator:
    error: int
    node_id: int
    host: str
    port: int


def find_coordinator(bootstrap: str, group: str, timeout_s: float = METADATA_TIMEOUT_S,
                     key_type: int = 0) -> Coordinator:
    """FindCoordinator v1 for a consumer group (key type 0) or a transactional id (1), asked of
    exactly the broker at `bootstrap`."""
    r = _call(bootstrap, 10, 1, _string(group) + struct.pack(">b", key_type), timeout_s)
    r.take("i")  # throttle_time_ms
    error = r.take("h")
    r.string()  # error_message
    return Coordinator(error, r.take("i"), r.string() or "", r.take("i"))


# --- the cluster ---------------------------------------------------------------------------

class StrataCluster:
    """Brokers with node ids, all pointing at one etcd under one key prefix."""

    def __init__(self, brokers: dict[int, StrataBroker], etcd_endpoints: str, prefix: str):
        self.brokers = brokers  # node id → broker
        self.etcd_endpoints = etcd_endpoints
        self.prefix = prefix

    @property
    def bootstrap(self) -> str:
        """Every broker's address, comma-joined (a client's `bootstrap.servers`)."""
        return ",".join(b.bootstrap for b in self.brokers.values())

    def broker(self, node_id: int) -> StrataBroker:
        return self.brokers[node_id]

    def running(self) -> dict[int, StrataBroker]:
        return {node_id: b for node_id, b in self.brokers.items() if b.running()}

    def any_running(self, avoid: set[int] = frozenset()) -> StrataBroker:
        for node_id, b in self.running().items():
            if node_id not in avoid:
                return b
        raise AssertionError(f"no running broker outside {sorted(avoid)}")

    def metadata(self, node_id: int | None = None, topics: list[str] | None = None) -> Metadata:
        """What broker `node_id` (default: the first running one) says now."""
        b = self.brokers[node_id] if node_id is not None else self.any_running()
        return metadata(b.bootstrap, topics)

    def wait_for_members(self, expected: set[int] | None = None, timeout_s: float = MEMBERS_TIMEOUT_S) -> None:
        """Waits until every running broker lists exactly `expected` (default: the running brokers'
        ids) in Metadata and names a controller among them."""
        want = set(self.running()) if expected is None else set(expected)

        def agreed() -> bool:
            for node_id in self.running():
                md = self.metadata(node_id)
                if set(md.brokers) != want or md.controller_id not in want:
                    return False
            return True

        wait_until(agreed, timeout_s, f"every running broker to list brokers {sorted(want)} and a controller")

    def controller(self) -> int:
        """The controller id the running brokers agree on (waits until they do)."""
        def agreed() -> int | None:
            ids = {self.metadata(node_id).controller_id for node_id in self.running()}
            if len(ids) == 1:
                (only,) = ids
                return only if only in self.brokers else None
            return None

        return wait_until(agreed, MEMBERS_TIMEOUT_S, "the running brokers to agree on a controller")

    def output_tail(self) -> str:
        return "\n".join(f"=== broker {node_id} ===\n{b.output_tail()}" for node_id, b in self.brokers.items())


# --- partition requests sent to one chosen broker -----------------------------------------
# Each sends one request about one partition to exactly the broker at `bootstrap` and
# returns that partition's error code, so a test can ask a broker that does not lead it.

def _one_partition(topic: str, partition_fields: bytes) -> bytes:
    return struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1) + partition_fields


def produce_error(bootstrap: str, topic: str, partition: int, timeout_s: float = 10.0) -> int:
    """Produce v3 (acks=1) of a few bytes; leadership is checked before the records are."""
    records = b"\0" * 61
    body = struct.pack(">h", -1) + struct.pack(">hi", 1, 5000)
    body += _one_partition(topic, struct.pack(">ii", partition, len(records)) + records)
    r = _call(bootstrap, 0, 3, body, timeout_s)
    assert r.take("i") == 1 and r.string() == topic and r.take("i") == 1
    assert r.take("i") == partition
    return r.take("h")


def fetch_error(bootstrap: str, topic: str, partition: int, leader_epoch: int = -1,
                timeout_s: float = 10.0) -> int:
    """Fetch v9 from offset 0 with `leader_epoch` as the current leader epoch."""
    body = struct.pack(">iiiib", -1, 0, 0, 1 << 20, 0) + struct.pack(">ii", 0, -1)  # session id, epoch
    body += _one_partition(topic, struct.pack(">iiqqi", partition, leader_epoch, 0, -1, 1 << 20))
    body += struct.pack(">i", 0)  # forgotten topics
    r = _call(bootstrap, 1, 9, body, timeout_s)
    r.take("i")  # throttle_time_ms
    r.take("h")  # top-level error
    r.take("i")  # session id
    assert r.take("i") == 1 and r.string() == topic and r.take("i") == 1
    assert r.take("i") == partition
    return r.take("h")


def list_offsets_error(bootstrap: str, topic: str, partition: int, leader_epoch: int = -1,
                       timeout_s: float = 10.0) -> int:
    """ListOffsets v4 for the latest offset with `leader_epoch` as the current leader epoch."""
    body = struct.pack(">ib", -1, 0) + _one_partition(topic, struct.pack(">iiq", partition, leader_epoch, -1))
    r = _call(bootstrap, 2, 4, body, timeout_s)
    r.take("i")  # throttle_time_ms
    assert r.take("i") == 1 and r.string() == topic and r.take("i") == 1
    assert r.take("i") == partition
    return r.take("h")


def delete_records_error(bootstrap: str, topic: str, partition: int, timeout_s: float = 10.0) -> int:
    """DeleteRecords v0 up to offset 0 (deletes nothing where it is allowed)."""
    body = _one_partition(topic, struct.pack(">iq", partition, 0)) + struct.pack(">i", 5000)
    r = _call(bootstrap, 21, 0, body, timeout_s)
    r.take("i")  # throttle_time_ms
    assert r.take("i") == 1 and r.string() == topic and r.take("i") == 1
    assert r.take("i") == partition
    r.take("q")  # low watermark
    return r.take("h")


def offset_for_leader_epoch_error(bootstrap: str, topic: str, partition: int, leader_epoch: int = -1,
                                  timeout_s: float = 10.0) -> int:
    """OffsetForLeaderEpoch v2 asking for epoch 0 with `leader_epoch` as the current one."""
    body = _one_partition(topic, struct.pack(">iii", partition, leader_epoch, 0))
    r = _call(bootstrap, 23, 2, body, timeout_s)
    r.take("i")  # throttle_time_ms
    assert r.take("i") == 1 and r.string() == topic and r.take("i") == 1
    error = r.take("h")
    assert r.take("i") == partition
    return error
