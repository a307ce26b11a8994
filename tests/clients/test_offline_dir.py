"""A log dir that runs out of space goes offline without leaving the broker half alive.

Two log dirs, the second a 2 MiB tmpfs. A topic on the tmpfs is filled until ENOSPC; then
its partition must answer as offline (Produce and Fetch: KAFKA_STORAGE_ERROR; Metadata: no
leader, this broker in offline_replicas), DeleteTopics of it is refused and the topic kept
(also after a restart), a topic on the other dir keeps serving, SIGTERM exits 0, and once
space is freed a restart serves every acknowledged record.

Needs root (mount); skipped with the reason when the tmpfs cannot be mounted.
"""

from __future__ import annotations

import socket
import struct
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from records import admin, consume_confluent, create_topic

KAFKA_STORAGE_ERROR = 56
LEADER_NOT_AVAILABLE = 5
BROKER_ID = 1
VALUE_SIZE = 10_000
TIMEOUT_S = 60


@pytest.fixture
def small_dir(tmp_path):
    path = tmp_path / "small"
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a 2 MiB tmpfs at {path} (needs root): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


# --- raw protocol: the clients hide per-partition errors behind retries -------------------

def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _call(bootstrap: str, api_key: int, version: int, body: bytes) -> bytes:
    host, port = bootstrap.split(":")
    header = struct.pack(">hhi", api_key, version, 7) + _string("strata-test")
    frame = header + body
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _read(sock, 4))[0]
        payload = _read(sock, size)
    assert struct.unpack(">i", payload[:4])[0] == 7
    return payload[4:]


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        out += chunk
    return out


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return v[0]

    def string(self) -> str | None:
        n = self.take("h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def ints(self) -> list[int]:
        return [self.take("i") for _ in range(self.take("i"))]


def raw_fetch_error(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    """Fetch v4 from offset 0: (error code, bytes of records) of the partition."""
    body = struct.pack(">iiiib", -1, 0, 0, 1 << 20, 0)
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
    body += struct.pack(">iqi", partition, 0, 1 << 20)
    r = _Reader(_call(bootstrap, 1, 4, body))
    r.take("i")  # throttle
    assert r.take("i") == 1 and r.string() == topic
    assert r.take("i") == 1
    assert r.take("i") == partition
    error = r.take("h")
    r.take("q"), r.take("q")
    aborted = r.take("i")
    for _ in range(max(aborted, 0)):
        r.take("q"), r.take("q")
    size = r.take("i")
    return error, max(size, 0)


def raw_metadata(bootstrap: str, topic: str) -> dict:
    """Metadata v5 of one topic's partition 0: error, leader, replicas, isr, offline."""
    body = struct.pack(">i", 1) + _string(topic) + struct.pack(">b", 0)
    r = _Reader(_call(bootstrap, 3, 5, body))
    r.take("i")
    for _ in range(r.take("i")):
        r.take("i"), r.string(), r.take("i"), r.string()
    r.string(), r.take("i")
    assert r.take("i") == 1
    topic_error = r.take("h")
    assert r.string() == topic
    r.take("b")
    partitions = {}
    for _ in range(r.take("i")):
        error, index, leader = r.take("h"), r.take("i"), r.take("i")
        partitions[index] = {"error": error, "leader": leader, "replicas": r.ints(),
                             "isr": r.ints(), "offline": r.ints()}
    return {"error": topic_error, "partitions": partitions}


# --- clients ----------------------------------------------------------------------------

def produce_one(bootstrap: str, topic: str, value: bytes):
    """One record, no retries: (error or None, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "retries": 0,
                         "enable.idempotence": False, "compression.type": "none",
                         "message.timeout.ms": 15000})
    result = {}

    def on_delivery(err, msg):
        result["err"], result["offset"] = err, msg.offset()

    producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0
    return result["err"], result["offset"]


def value_of(i: int) -> bytes:
    head = f"filler-{i}-".encode()
    return head + bytes([i % 251]) * (VALUE_SIZE - len(head))


def delete_topic_error(bootstrap: str, topic: str) -> KafkaError | None:
    client = admin(bootstrap)  # kept alive until the answer is in
    futures = client.delete_topics([topic], operation_timeout=30)
    try:
        futures[topic].result(timeout=TIMEOUT_S)
        return None
    except KafkaException as e:
        return e.args[0]


def topic_names(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=TIMEOUT_S).topics)


def test_enospc_takes_one_dir_offline_and_the_broker_stays_consistent(broker_factory, tmp_path, small_dir):
    big = tmp_path / "big"
    big.mkdir()
    ballast = small_dir / "ballast"
    ballast.write_bytes(b"\0" * (384 * 1024))
    broker = broker_factory({"log.dirs": f"{big},{small_dir}", "offsets.topic.num.partitions": "1"},
                            log_dir=big).start()

    # Placement: the online dir with the fewest partitions, the first on ties.
    create_topic(broker.bootstrap, "healthy")
    create_topic(broker.bootstrap, "filler")
    assert (big / "healthy-0").is_dir() and (small_dir / "filler-0").is_dir()

    acked: list[tuple[int, bytes]] = []
    first_error = None
    for i in range(1000):
        err, offset = produce_one(broker.bootstrap, "filler", value_of(i))
        if err is not None:
            first_error = err
            break
        assert offset == len(acked)
        acked.append((offset, value_of(i)))
    assert first_error is not None, "the 2 MiB dir never filled up"
    assert first_error.code() == KafkaError.KAFKA_STORAGE_ERROR, f"got {first_error}"
    assert len(acked) > 10

    # The partition is offline, not empty.
    err, _ = produce_one(broker.bootstrap, "filler", b"after")
    assert err is not None, "a write to the offline partition was acknowledged"
    assert raw_fetch_error(broker.bootstrap, "filler")[0] == KAFKA_STORAGE_ERROR
    md = raw_metadata(broker.bootstrap, "filler")["partitions"][0]
    assert (md["error"], md["leader"]) == (LEADER_NOT_AVAILABLE, -1), md
    assert md["offline"] == [BROKER_ID] and md["replicas"] == [BROKER_ID], md
    healthy_md = raw_metadata(broker.bootstrap, "healthy")["partitions"][0]
    assert (healthy_md["error"], healthy_md["leader"], healthy_md["offline"]) == (0, BROKER_ID, [])

    # The other dir keeps serving produce and consume.
    for i in range(3):
        err, offset = produce_one(broker.bootstrap, "healthy", f"h-{i}".encode())
        assert err is None and offset == i
    got = consume_confluent(broker.bootstrap, "healthy", 3)
    assert [m.value for m in got] == [b"h-0", b"h-1", b"h-2"]

    # DeleteTopics is refused and the topic kept.
    err = delete_topic_error(broker.bootstrap, "filler")
    assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR, f"got {err}"
    assert "filler" in topic_names(broker.bootstrap)

    assert broker.stop() == 0
    output = broker.output_tail(max_bytes=1_000_000)
    assert "No space left on device" in output, "the OS error is missing from the logs"
    assert (big / ".kafka_cleanshutdown").exists()
    assert not (small_dir / ".kafka_cleanshutdown").exists()

    # Space freed, restart: the refused deletion removed nothing, every acknowledged record
    # is back and the partition takes writes again. (Not restarted while still full: on
    # tmpfs even reading a hole of the sparse, memory-mapped index needs a free page, so
    # recovery would die of SIGBUS; disk file systems map holes without allocating.)
    ballast.unlink()
    broker.start()
    assert "filler" in topic_names(broker.bootstrap)
    assert raw_metadata(broker.bootstrap, "filler")["partitions"][0]["error"] == 0
    got = consume_confluent(broker.bootstrap, "filler", len(acked))
    assert [(m.offset, m.value) for m in got] == acked
    assert [m.value for m in consume_confluent(broker.bootstrap, "healthy", 3)] == [b"h-0", b"h-1", b"h-2"]
    err, offset = produce_one(broker.bootstrap, "filler", b"again")
    assert err is None and offset == len(acked)
    assert broker.stop() == 0
