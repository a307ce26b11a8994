"""kafka-python 3.x: the default producer (idempotent, acks=all) and a manual assign + seek consumer.

kafka-python infers the broker's version from ApiVersions and gates features on it, so this
also guards that Strata advertises ranges that look like a modern broker.
"""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from records import Record, assert_records, create_topic, make_records

TIMEOUT_S = 60


def consume(bootstrap: str, topic: str, start: int, count: int) -> list[Record]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="none", request_timeout_ms=30000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, start)
        out: list[Record] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < count and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=500).values():
                out += [Record(m.key, m.value, list(m.headers), m.timestamp, m.offset) for m in msgs]
        assert consumer.position(tp) == start + len(out)
        return out
    finally:
        consumer.close()


def test_default_producer_then_assign_and_seek(broker):
    topic = "kafka-python"
    create_topic(broker.bootstrap, topic)
    records = make_records("kp", 250)

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    # The 3.x defaults are what users get: idempotence on, acks=all.
    assert producer.config["enable_idempotence"] is True
    assert producer.config["acks"] == -1
    try:
        futures = [producer.send(topic, value=r.value, key=r.key, headers=r.headers, partition=0,
                                 timestamp_ms=r.timestamp) for r in records]
        producer.flush(timeout=TIMEOUT_S)
        metadata = [f.get(timeout=TIMEOUT_S) for f in futures]
    finally:
        producer.close(timeout=TIMEOUT_S)
    assert [m.offset for m in metadata] == list(range(len(records)))
    assert [m.timestamp for m in metadata] == [r.timestamp for r in records]

    assert_records(consume(broker.bootstrap, topic, 0, len(records)), records)
    assert_records(consume(broker.bootstrap, topic, 137, len(records) - 137), records[137:], first_offset=137)
