"""Incremental fetch sessions (KIP-227) with real clients, observed on the wire.

Each broker advertises a sniffing proxy (fetch_sniffer.py) so every Fetch goes through it, and
the test asserts what the requests and responses carried:
- the Java consumer (3.9) and kafka-python (3.0) open a session with a full fetch and then send
  incremental fetches listing only partitions whose position moved; in steady state the
  responses list only partitions that changed; every record arrives exactly once;
- with one cache slot and sessions evictable at once, two Java consumers evict each other's
  sessions (FETCH_SESSION_ID_NOT_FOUND) and still read everything exactly;
- librdkafka does not implement KIP-227 (session id 0, epoch -1 in every fetch) and keeps
  working sessionless against the session-enabled broker.
"""

from __future__ import annotations

import json
import time

from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from broker import free_port
from fetch_sniffer import FetchSniffer
from records import consume_confluent, create_topic

PARTITIONS = 50
PER_PARTITION = 4
CHANGED = (7, 31)
LATE = 5
DEADLINE_S = 60


def sniffed_broker(broker_factory, overrides: dict[str, str] | None = None):
    proxy_port = free_port()
    broker = broker_factory({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                             **(overrides or {})}).start()
    return broker, FetchSniffer(proxy_port, broker.port), f"127.0.0.1:{proxy_port}"


def produce(bootstrap: str, topic: str, items: list[tuple[int, str]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failed = []
    for partition, value in items:
        producer.produce(topic, value=value.encode(), partition=partition,
                         on_delivery=lambda err, _msg: err and failed.append(err))
    assert producer.flush(30) == 0 and not failed, failed


def first_batch(topic_partitions: int) -> dict[int, list[str]]:
    return {p: [f"a-{p}-{i}" for i in range(PER_PARTITION)] for p in range(topic_partitions)}


def produce_expected(bootstrap: str, topic: str, expected: dict[int, list[str]]) -> None:
    produce(bootstrap, topic, [(p, v) for p, values in expected.items() for v in values])


def wait_for(condition, what: str, timeout_s: float = DEADLINE_S):
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return result


def java_lines(proc):
    for line in proc.stdout:
        if line.startswith("{"):
            yield json.loads(line)


def assert_session_use(exchanges, partitions: int, mark: int, changed: set[int]) -> None:
    """The first fetch is full and opens a session; every later one is incremental in it; after
    `mark` (steady state), requests and responses list only `changed` partitions."""
    first = exchanges[0]
    assert (first.session_id, first.epoch) == (0, 0), first
    assert len(first.partitions) == partitions, first
    sid = first.response_session_id
    assert sid != 0, first
    later = exchanges[1:]
    if later and later[-1].epoch == -1:
        # The Java consumer closes its session when it closes (epoch -1, sessionless answer).
        close = later.pop()
        assert (close.session_id, close.response_session_id, close.response_error) == (sid, 0, 0), close
    assert later, "no incremental fetch"
    assert all(e.session_id == sid and e.epoch > 0 for e in later), [(e.session_id, e.epoch) for e in later][:10]
    assert [e.epoch for e in later] == list(range(1, len(later) + 1))
    steady = [e for e in exchanges[mark:] if e.epoch > 0]
    listed = [{p for _, p, _ in e.partitions} for e in steady]
    answered = [{p for _, p, _ in e.response_partitions} for e in steady]
    assert all(s <= changed for s in listed), listed
    assert all(s <= changed for s in answered), answered
    assert any(listed), "the moved positions were never sent"
    assert any(answered), "the new records were never answered"


def test_java_consumer_uses_incremental_sessions(broker_factory, java):
    broker, sniffer, bootstrap = sniffed_broker(broker_factory)
    try:
        topic = "sessions-java"
        create_topic(bootstrap, topic, partitions=PARTITIONS)
        expected = first_batch(PARTITIONS)
        produce_expected(bootstrap, topic, expected)
        total = PARTITIONS * PER_PARTITION + len(CHANGED) * LATE
        proc = java.spawn("SessionConsume", bootstrap, topic, PARTITIONS, total)
        got: dict[int, list[tuple[int, str]]] = {}
        try:
            lines = java_lines(proc)
            for _ in range(PARTITIONS * PER_PARTITION):
                line = next(lines)
                assert line["event"] == "record", line
                got.setdefault(line["partition"], []).append((line["offset"], line["value"]))
            # Steady state: an incremental fetch listing nothing, answered with nothing.
            wait_for(lambda: any(e.epoch > 0 and not e.partitions and not e.response_partitions
                                 for e in sniffer.snapshot()), "an empty incremental fetch")
            mark = len(sniffer.snapshot())
            late = [(p, f"b-{p}-{i}") for p in CHANGED for i in range(LATE)]
            produce(bootstrap, topic, late)
            for p, v in late:
                expected[p].append(v)
            for line in lines:
                if line["event"] == "done":
                    assert line["read"] == total, line
                    break
                got.setdefault(line["partition"], []).append((line["offset"], line["value"]))
            assert proc.wait(timeout=DEADLINE_S) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert got == {p: list(enumerate(v)) for p, v in expected.items()}
        assert_session_use(sniffer.snapshot(), PARTITIONS, mark, set(CHANGED))
    finally:
        sniffer.close()


def test_kafka_python_uses_incremental_sessions(broker_factory):
    broker, sniffer, bootstrap = sniffed_broker(broker_factory)
    consumer = None
    try:
        topic = "sessions-kafka-python"
        create_topic(bootstrap, topic, partitions=PARTITIONS)
        expected = first_batch(PARTITIONS)
        produce_expected(bootstrap, topic, expected)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", fetch_max_wait_ms=100)
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got: dict[int, list[tuple[int, str]]] = {}

        def read_until(n: int) -> None:
            deadline = time.monotonic() + DEADLINE_S
            while sum(map(len, got.values())) < n:
                assert time.monotonic() < deadline, got
                for tp, msgs in consumer.poll(timeout_ms=200).items():
                    got.setdefault(tp.partition, []).extend((m.offset, m.value.decode()) for m in msgs)

        read_until(PARTITIONS * PER_PARTITION)

        def steady():
            consumer.poll(timeout_ms=100)
            return any(e.epoch > 0 and not e.partitions and not e.response_partitions for e in sniffer.snapshot())

        wait_for(steady, "an empty incremental fetch")
        # A fetch may still be in flight: it is answered before the next one is sent.
        mark = len(sniffer.snapshot())
        late = [(p, f"b-{p}-{i}") for p in CHANGED for i in range(LATE)]
        produce(bootstrap, topic, late)
        for p, v in late:
            expected[p].append(v)
        read_until(PARTITIONS * PER_PARTITION + len(late))
        consumer.poll(timeout_ms=300)
        assert got == {p: list(enumerate(v)) for p, v in expected.items()}
        assert_session_use(sniffer.snapshot(), PARTITIONS, mark, set(CHANGED))
    finally:
        if consumer is not None:
            consumer.close()
        sniffer.close()


def test_two_java_consumers_evicting_each_other_read_everything(broker_factory, java):
    broker, sniffer, bootstrap = sniffed_broker(broker_factory, {
        "max.incremental.fetch.session.cache.slots": "1",
        "strata.fetch.session.eviction.ms": "0",
    })
    try:
        topic = "sessions-evict"
        partitions = 10
        rounds = 3
        create_topic(bootstrap, topic, partitions=partitions)
        expected = first_batch(partitions)
        produce_expected(bootstrap, topic, expected)
        total = partitions * (PER_PARTITION + rounds)
        procs = [java.spawn("SessionConsume", bootstrap, topic, partitions, total) for _ in range(2)]
        got: list[dict[int, list[tuple[int, str]]]] = [{}, {}]
        try:
            lines = [java_lines(proc) for proc in procs]

            def read(n: int) -> None:
                for i in range(2):
                    for _ in range(n):
                        line = next(lines[i])
                        assert line["event"] == "record", line
                        got[i].setdefault(line["partition"], []).append((line["offset"], line["value"]))

            read(partitions * PER_PARTITION)
            # Both consumers are running now: each new record makes both fetch, and each full
            # fetch evicts the other's session (unused for more than 0 ms).
            for r in range(rounds):
                batch = [(p, f"c{r}-{p}") for p in range(partitions)]
                produce(bootstrap, topic, batch)
                for p, v in batch:
                    expected[p].append(v)
                read(partitions)
            for i, proc in enumerate(procs):
                assert next(lines[i]) == {"event": "done", "read": total}
                assert proc.wait(timeout=DEADLINE_S) == 0
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        for g in got:
            assert g == {p: list(enumerate(v)) for p, v in expected.items()}
        exchanges = sniffer.snapshot()
        summary = [(e.session_id, e.epoch, e.response_error) for e in exchanges]
        assert any(e.response_error == 70 for e in exchanges), summary
        assert all(e.response_error in (0, 70) for e in exchanges), summary
    finally:
        sniffer.close()


def test_librdkafka_stays_sessionless(broker_factory):
    broker, sniffer, bootstrap = sniffed_broker(broker_factory)
    try:
        topic = "sessions-librdkafka"
        create_topic(bootstrap, topic, partitions=1)
        values = [f"r-{i}" for i in range(50)]
        produce(bootstrap, topic, [(0, v) for v in values])
        got = consume_confluent(bootstrap, topic, len(values))
        assert [(r.offset, r.value.decode()) for r in got] == list(enumerate(values))
        exchanges = sniffer.snapshot()
        assert exchanges
        assert all((e.session_id, e.epoch) == (0, -1) for e in exchanges), \
            {(e.session_id, e.epoch) for e in exchanges}
        assert all(e.response_session_id == 0 and e.response_error == 0 for e in exchanges)
    finally:
        sniffer.close()
