"""Shared record fixtures and checks for the client tests.

Every test produces records built by `make_records` and checks what comes back with
`assert_records`: same key, value, headers and timestamp, in order, at consecutive
offsets. The Java programs build the same records from the same (prefix, count,
base timestamp) so Python can check them too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

# A fixed CreateTime in the past (2024-01-01T00:00:00Z) keeps timestamps deterministic and
# far from "now", so a broker that stamps its own time instead is caught.
BASE_TIMESTAMP_MS = 1_704_067_200_000

ADMIN_TIMEOUT_S = 30.0
CONSUME_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    timestamp: int | None = None
    offset: int | None = None


def make_records(prefix: str, count: int, base_ts: int = BASE_TIMESTAMP_MS, value_pad: int = 0) -> list[Record]:
    """Records `prefix-key-i` / `prefix-value-i` with header `h=prefix-h-i`, CreateTime base_ts+i."""
    pad = "x" * value_pad
    return [
        Record(
            key=f"{prefix}-key-{i}".encode(),
            value=f"{prefix}-value-{i}{pad}".encode(),
            headers=[("h", f"{prefix}-h-{i}".encode())],
            timestamp=base_ts + i,
        )
        for i in range(count)
    ]


def assert_records(got: list[Record], expected: list[Record], first_offset: int = 0) -> None:
    """Checks got == expected in order, each at offset first_offset + index."""
    assert len(got) == len(expected), f"got {len(got)} records, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        where = f"record {i} (offset {g.offset})"
        assert g.offset == first_offset + i, f"{where}: expected offset {first_offset + i}"
        assert g.key == e.key, f"{where}: key {g.key!r} != {e.key!r}"
        assert g.value == e.value, f"{where}: value {g.value!r} != {e.value!r}"
        assert list(g.headers) == list(e.headers), f"{where}: headers {g.headers!r} != {e.headers!r}"
        if e.timestamp is not None:
            assert g.timestamp == e.timestamp, f"{where}: timestamp {g.timestamp} != {e.timestamp}"


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                 replication_factor: int = 1) -> None:
    """Creates a topic through CreateTopics and waits until Metadata shows its leaders."""
    client = admin(bootstrap)
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=config or {})],
        operation_timeout=ADMIN_TIMEOUT_S,
    )
    futures[name].result(timeout=ADMIN_TIMEOUT_S)
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while True:
        meta = client.list_topics(topic=name, timeout=ADMIN_TIMEOUT_S)
        topic = meta.topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            if all(p.leader >= 0 for p in topic.partitions.values()):
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} not ready in metadata: {topic}")
        time.sleep(0.1)


def consume_confluent(
    bootstrap: str, topic: str, count: int, partition: int = 0, start_offset: int = 0,
    timeout_s: float = CONSUME_TIMEOUT_S, extra: dict | None = None, to_end: bool = False,
) -> list[Record]:
    """Reads `count` records with librdkafka from a manually assigned partition. With `to_end`,
    stops early at the partition's end (the high watermark, or the last stable offset under
    read_committed): "everything there is, and no more than `count`" without waiting out the
    timeout for a record that should not exist."""
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"strata-test-{topic}",
        "enable.auto.commit": False,
        "enable.partition.eof": to_end,
        **(extra or {}),
    }
    consumer = Consumer(conf)
    try:
        consumer.assign([TopicPartition(topic, partition, start_offset)])
        out: list[Record] = []
        deadline = time.monotonic() + timeout_s
        at_end = False
        while len(out) < count and not at_end and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=min(1000, count - len(out)), timeout=0.5):
                if msg.error():
                    if to_end and msg.error().code() == KafkaError._PARTITION_EOF:
                        at_end = True
                        break
                    raise KafkaException(msg.error())
                _, ts = msg.timestamp()
                out.append(Record(msg.key(), msg.value(), list(msg.headers() or []), ts, msg.offset()))
        return out
    finally:
        consumer.close()


def end_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The partition's log end offset (high watermark) via ListOffsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"strata-test-eo-{topic}"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=ADMIN_TIMEOUT_S)
        return high
    finally:
        consumer.close()


def list_end_offsets(bootstrap: str, topic: str, partitions: int, read_committed: bool) -> dict[int, int]:
    """ListOffsets(latest) for every partition at one isolation level: the last stable offset for
    read_committed, the high watermark for read_uncommitted."""
    level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    client = admin(bootstrap)  # kept referenced until the futures resolve
    futures = client.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
        isolation_level=level, request_timeout=ADMIN_TIMEOUT_S,
    )
    return {tp.partition: f.result(timeout=ADMIN_TIMEOUT_S).offset for tp, f in futures.items()}


def wait_stable(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> dict[int, int]:
    """Waits until no partition has an open transaction (read_committed end offset == high
    watermark on every partition) and returns the end offsets; fails naming both otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        stable = list_end_offsets(bootstrap, topic, partitions, read_committed=True)
        high = list_end_offsets(bootstrap, topic, partitions, read_committed=False)
        if stable == high:
            return high
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}: last stable offsets {stable} never reached the high watermarks {high}"
                                 f" in {timeout_s}s (a transaction left open?)")
        time.sleep(0.1)
