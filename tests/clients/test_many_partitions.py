"""Many partitions under a small open-file limit (`strata.log.max.open.files`, issue 19).

A broker with `strata.log.max.open.files=16` holds 200 partitions. librdkafka writes records to
every partition and reads every partition back exactly (values, order, offsets), twice (the
second pass reopens handles the first one evicted) and again after a clean restart; all the
while the broker's open descriptors (`/proc/<pid>/fd`) stay below the limit plus a fixed slack
(sockets, the data dirs' locks, checkpoints, stdio), where Kafka would hold one per segment.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from records import create_topic

TOPIC = "many"
PARTITIONS = 200
PER_PARTITION = 5
LIMIT = 16
# Descriptors the broker holds besides the cache's: listeners, client sockets, epoll and
# eventfds of the runtime, the log dir lock, stdio, checkpoint and snapshot files while written,
# and the `.log` files a fetch response in flight holds (a few with fetch.max.bytes=8192).
SLACK = 48


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class FdWatch:
    """Samples the broker's descriptor count in a thread; `peak` is the highest seen."""

    def __init__(self, pid: int):
        self.pid, self.peak, self.samples = pid, 0, 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.peak = max(self.peak, fd_count(self.pid))
                self.samples += 1
            except FileNotFoundError:
                return
            self.stopping.wait(0.005)

    def __enter__(self) -> "FdWatch":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join()


def value(p: int, i: int) -> bytes:
    return f"p{p}-r{i}-".encode() + b"x" * 200


def produce_all(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[str] = []

    def report(err, _msg):
        if err is not None:
            failures.append(str(err))

    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce(TOPIC, value=value(p, i), partition=p, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert failures == []


def read_all(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    # A fetch response holds the `.log` of every partition it carries until it is sent (the
    # cache never closes a file in use), so a small fetch.max.bytes keeps the in-flight count
    # small; with the default 50 MiB one response would carry all 200 partitions.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "many-reader",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                         "fetch.max.bytes": 8192, "message.max.bytes": 4096,
                         "max.partition.fetch.bytes": 4096})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    n = 0
    deadline = time.monotonic() + 30
    while n < PARTITIONS * PER_PARTITION and time.monotonic() < deadline:
        for m in consumer.consume(500, timeout=1.0):
            assert m.error() is None, m.error()
            got[m.partition()].append((m.offset(), m.value()))
            n += 1
    consumer.close()
    return got


def check(got: dict[int, list[tuple[int, bytes]]]) -> None:
    for p in range(PARTITIONS):
        assert got[p] == [(i, value(p, i)) for i in range(PER_PARTITION)], f"partition {p}"


def test_many_partitions_with_a_small_open_file_limit(broker_factory):
    broker = broker_factory({"strata.log.max.open.files": str(LIMIT)}).start()
    pid = broker.process.pid
    with FdWatch(pid) as watch:
        create_topic(broker.bootstrap, TOPIC, partitions=PARTITIONS)
        produce_all(broker.bootstrap)
        check(read_all(broker.bootstrap))
        check(read_all(broker.bootstrap))
    assert watch.samples > 10
    assert watch.peak < LIMIT + SLACK, f"peak {watch.peak} descriptors with limit {LIMIT}"

    broker.stop()
    broker.start()
    with FdWatch(broker.process.pid) as watch:
        check(read_all(broker.bootstrap))
    assert watch.peak < LIMIT + SLACK, f"after restart: peak {watch.peak} descriptors"
    # Kafka would hold one `.log` descriptor per segment here.
    segments = list(Path(broker.log_dir).glob(f"{TOPIC}-*/*.log"))
    assert len(segments) >= PARTITIONS
