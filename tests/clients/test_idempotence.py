"""Idempotent producers end to end: retries after lost responses, dropped connections and broker
crashes must neither duplicate nor lose records.

The broker sits behind `FaultyProxy` (loopback; the broker advertises the proxy's port, so every
client connection passes through it). The proxy swallows Produce responses after the broker wrote
the records and closes connections before requests arrive; the clients, at their default settings
(idempotence on, acks=all, unlimited retries), resend. Everything is then consumed and each
partition must hold every record exactly once, in send order.

Crash tests SIGKILL the broker while Produce responses are held back by the proxy (the records are
in the log, the client has no answer), optionally delete or corrupt the producer snapshots, restart
on the same log dir and let the same producer carry on: its retries must be recognised from the
rebuilt state (no duplicates) and its next batches accepted (no false OUT_OF_ORDER_SEQUENCE).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaProducer

from faulty_proxy import FaultyProxy
from records import create_topic, end_offset

CONSUME_TIMEOUT_S = 120.0
VALUE = re.compile(rb"^(?P<prefix>[a-z0-9]+)-value-(?P<index>\d+)$")


@pytest.fixture
def proxied(broker_factory):
    """Returns start(every, overrides) -> (broker, proxy); the proxy outlives broker restarts."""
    proxies: list[FaultyProxy] = []

    def start(every: int = 0, overrides: dict[str, str] | None = None):
        holder = {}
        proxy = FaultyProxy(lambda: holder["broker"].port, every=every)
        proxies.append(proxy)
        b = broker_factory({"advertised.listeners": f"PLAINTEXT://{proxy.bootstrap}", **(overrides or {})})
        holder["broker"] = b
        b.start()
        return b, proxy

    yield start
    for p in proxies:
        p.close()


def consume_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition up to its end offset: {partition: [(offset, value)]}."""
    ends = {p: end_offset(bootstrap, topic, p) for p in range(partitions)}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"idem-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while any(len(out[p]) < ends[p] for p in out) and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                assert msg.error() is None, msg.error()
                out[msg.partition()].append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    for p in out:
        assert len(out[p]) == ends[p], f"partition {p}: consumed {len(out[p])} of {ends[p]}"
    return out


def assert_exactly_once(got: dict[int, list[tuple[int, bytes]]], prefix: str, count: int) -> None:
    """Record i is on partition i % partitions; each partition holds its records once, in order,
    at consecutive offsets from 0."""
    partitions = len(got)
    for p, records in got.items():
        expected = list(range(p, count, partitions))
        indexes = []
        for i, (offset, value) in enumerate(records):
            assert offset == i, f"partition {p}: offset {offset} at position {i}"
            m = VALUE.match(value)
            assert m and m["prefix"] == prefix.encode(), f"partition {p} offset {offset}: {value!r}"
            indexes.append(int(m["index"]))
        dups = len(indexes) - len(set(indexes))
        missing = sorted(set(expected) - set(indexes))[:10]
        assert dups == 0, f"partition {p}: {dups} duplicated records"
        assert not missing, f"partition {p}: missing records {missing}..."
        assert indexes == expected, f"partition {p}: records out of order"


def kafka_python_producer(bootstrap: str) -> KafkaProducer:
    # Default settings (idempotent, acks=all, unlimited retries); only a shorter reconnect backoff
    # cap so the restarts below do not idle the test.
    return KafkaProducer(bootstrap_servers=bootstrap, reconnect_backoff_max_ms=500)


def send_kafka_python(producer: KafkaProducer, topic: str, prefix: str, indexes: range, partitions: int):
    return [producer.send(topic, key=f"{prefix}-key-{i}".encode(), value=f"{prefix}-value-{i}".encode(),
                          partition=i % partitions) for i in indexes]


def wait_all(futures, timeout_s: float = 150.0) -> None:
    errors = []
    for f in futures:
        try:
            f.get(timeout=timeout_s)
        except Exception as e:  # noqa: BLE001 - every failure is reported below
            errors.append(repr(e))
    assert not errors, f"{len(errors)} sends failed, first: {errors[0]}"


def test_java_producer_through_faulty_proxy(proxied, java):
    b, proxy = proxied(every=3)
    topic, prefix, count, partitions = "idem-java", "java", 6000, 3
    create_topic(proxy.bootstrap, topic, partitions=partitions)

    out = java.run("IdempotentProduce", proxy.bootstrap, topic, prefix, count, partitions, 20, timeout=300)
    done = [o for o in out if o["event"] == "done"][0]
    assert done["failed"] == 0, done["firstError"]
    assert done["acked"] == count

    assert proxy.stats.dropped_responses >= 10, proxy.stats
    assert proxy.stats.closed_before_forward >= 10, proxy.stats
    print(f"proxy: {proxy.stats}")
    proxy.every = 0
    assert_exactly_once(consume_all(b.bootstrap, topic, partitions), prefix, count)


def test_kafka_python_producer_through_faulty_proxy(proxied):
    b, proxy = proxied(every=3)
    topic, prefix, count, partitions = "idem-kp", "kp", 4000, 3
    create_topic(proxy.bootstrap, topic, partitions=partitions)

    producer = kafka_python_producer(proxy.bootstrap)
    try:
        futures = []
        # Small chunks: many Produce requests, so many of them are broken.
        for start in range(0, count, 20):
            futures += send_kafka_python(producer, topic, prefix, range(start, min(start + 20, count)), partitions)
            producer.flush(timeout=150)
        wait_all(futures)
    finally:
        producer.close(timeout=30)

    assert proxy.stats.dropped_responses >= 10, proxy.stats
    assert proxy.stats.closed_before_forward >= 10, proxy.stats
    print(f"proxy: {proxy.stats}")
    proxy.every = 0
    assert_exactly_once(consume_all(b.bootstrap, topic, partitions), prefix, count)


def snapshot_files(log_dir: Path, topic: str) -> list[Path]:
    return sorted(log_dir.glob(f"{topic}-*/*.snapshot"))


def crash_and_continue(proxied, topic: str, damage, clean_stop: bool = False) -> None:
    """Produce, crash with responses held (records written, unacknowledged), damage the snapshots,
    restart, let the same producer finish, then check every record is there exactly once."""
    # Small segments: rolls write snapshots at segment bases, so the rebuild starts mid-log.
    b, proxy = proxied(every=0, overrides={"log.segment.bytes": "16384"})
    prefix, partitions = "crash", 2
    create_topic(proxy.bootstrap, topic, partitions=partitions)
    producer = kafka_python_producer(proxy.bootstrap)
    try:
        futures = send_kafka_python(producer, topic, prefix, range(0, 3000), partitions)
        producer.flush(timeout=150)
        wait_all(futures)

        proxy.hold_produce.set()
        held = send_kafka_python(producer, topic, prefix, range(3000, 3600), partitions)
        # The client stops at max.in.flight.requests.per.connection unanswered requests; wait
        # until the log stops growing with some of them written.
        deadline = time.monotonic() + 60
        written, previous = 0, -1
        while time.monotonic() < deadline:
            written = sum(end_offset(b.bootstrap, topic, p) for p in range(partitions))
            if written > 3000 and written == previous and proxy.stats.held_responses > 0:
                break
            previous = written
            time.sleep(0.3)
        assert written > 3000, f"no held batch reached the log ({written} records, {proxy.stats})"
        assert not any(f.is_done for f in held), "held responses must not reach the client"
        assert len(snapshot_files(b.log_dir, topic)) > 0, "rolls wrote producer snapshots"

        if clean_stop:
            assert b.stop() == 0
        else:
            b.kill()
        proxy.disconnect_all()
        damage(snapshot_files(b.log_dir, topic))
        proxy.hold_produce.clear()
        b.start()

        # The retries of the held batches must be answered as duplicates, and the producer's
        # next batches accepted in sequence.
        more = send_kafka_python(producer, topic, prefix, range(3600, 5000), partitions)
        producer.flush(timeout=150)
        wait_all(held + more)
    finally:
        producer.close(timeout=30)
    assert proxy.stats.held_responses > 0, proxy.stats
    print(f"proxy: {proxy.stats}")
    assert_exactly_once(consume_all(b.bootstrap, topic, partitions), prefix, 5000)


def test_sigkill_between_produce_and_snapshot(proxied):
    crash_and_continue(proxied, "idem-crash", damage=lambda snaps: None)


def test_sigkill_with_snapshots_deleted(proxied):
    crash_and_continue(proxied, "idem-crash-del", damage=lambda snaps: [p.unlink() for p in snaps])


def test_sigkill_with_snapshots_corrupted(proxied):
    def corrupt(snaps: list[Path]) -> None:
        for p in snaps:
            data = bytearray(p.read_bytes())
            data[-1] ^= 0xFF
            p.write_bytes(bytes(data))
    crash_and_continue(proxied, "idem-crash-bad", damage=corrupt)


def test_clean_restart_with_snapshots_deleted(proxied):
    crash_and_continue(proxied, "idem-clean-del", damage=lambda snaps: [p.unlink() for p in snaps], clean_stop=True)


def producer_id_of(bootstrap: str, topic: str) -> int:
    """The producer id InitProducerId hands a fresh default kafka-python producer."""
    producer = kafka_python_producer(bootstrap)
    try:
        producer.send(topic, value=b"x", partition=0).get(timeout=60)
        # Reaches into the client: it does not expose the id otherwise.
        return producer._transaction_manager.producer_id_and_epoch.producer_id
    finally:
        producer.close(timeout=30)


def test_producer_ids_are_never_reused_across_restarts_and_crashes(proxied):
    b, proxy = proxied(every=0)
    topic = "idem-ids"
    create_topic(proxy.bootstrap, topic)
    ids = [producer_id_of(proxy.bootstrap, topic), producer_id_of(proxy.bootstrap, topic)]
    b.kill()  # the id block was persisted before the first id was handed out
    proxy.disconnect_all()
    b.start()
    ids.append(producer_id_of(proxy.bootstrap, topic))
    assert b.stop() == 0
    b.start()
    ids.append(producer_id_of(proxy.bootstrap, topic))
    assert all(i >= 0 for i in ids), ids
    assert len(set(ids)) == len(ids), f"producer ids reused: {ids}"
    assert ids == sorted(ids), ids


class JavaProducerProcess:
    """`IdempotentProducerStdin`: one Java producer kept alive across broker restarts."""

    def __init__(self, java, bootstrap: str, topic: str, prefix: str, partitions: int):
        self.proc = subprocess.Popen(
            ["java", "-cp", java.classpath, "IdempotentProducerStdin", bootstrap, topic, prefix, str(partitions)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )
        self.expect("ready")

    def expect(self, event: str) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"java producer exited (code {self.proc.wait()}) waiting for {event}")
            if line.startswith("{"):
                msg = json.loads(line)
                if msg["event"] == event:
                    return msg

    def command(self, line: str, reply: str) -> dict:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.expect(reply)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("quit", "closed")
            finally:
                self.proc.wait(timeout=60)


def test_java_producer_keeps_going_across_sigkill_with_snapshots_deleted(proxied, java):
    b, proxy = proxied(every=0, overrides={"log.segment.bytes": "16384"})
    topic, prefix, partitions = "idem-java-crash", "jc", 2
    create_topic(proxy.bootstrap, topic, partitions=partitions)
    producer = JavaProducerProcess(java, proxy.bootstrap, topic, prefix, partitions)
    try:
        producer.command("send 0 3000", "sent")
        done = producer.command("flush", "flushed")
        assert (done["acked"], done["failed"]) == (3000, 0), done

        proxy.hold_produce.set()
        producer.command("send 3000 600", "sent")
        deadline = time.monotonic() + 60
        written, previous = 0, -1
        while time.monotonic() < deadline:
            written = sum(end_offset(b.bootstrap, topic, p) for p in range(partitions))
            if written > 3000 and written == previous and proxy.stats.held_responses > 0:
                break
            previous = written
            time.sleep(0.3)
        assert written > 3000, f"no held batch reached the log ({written} records, {proxy.stats})"

        b.kill()
        proxy.disconnect_all()
        for p in snapshot_files(b.log_dir, topic):
            p.unlink()
        proxy.hold_produce.clear()
        b.start()

        producer.command("send 3600 1400", "sent")
        done = producer.command("flush", "flushed")
        assert done["failed"] == 0, done["firstError"]
        assert done["acked"] == 5000, done
    finally:
        producer.close()
    print(f"proxy: {proxy.stats}")
    assert_exactly_once(consume_all(b.bootstrap, topic, partitions), prefix, 5000)
