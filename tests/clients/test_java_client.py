"""Java kafka-clients 3.9: default producer, assign + offsetsForTimes consumer, Admin round trip.

The Java producer's defaults enable idempotence, so producing at all requires InitProducerId
and sequence-checked Produce. The programs live in java/ and print JSON lines checked here.
"""

from __future__ import annotations

from records import BASE_TIMESTAMP_MS, assert_records, consume_confluent, create_topic, make_records, Record
from admin_checks import assert_admin_round_trip


def test_default_producer_is_idempotent_and_readable(broker, java):
    topic = "java-produce"
    create_topic(broker.bootstrap, topic)
    count = 200
    acks = java.run("ProduceDefault", broker.bootstrap, topic, "jp", count, BASE_TIMESTAMP_MS)
    assert [a["offset"] for a in acks] == list(range(count))
    assert [a["timestamp"] for a in acks] == [BASE_TIMESTAMP_MS + i for i in range(count)]
    assert_records(consume_confluent(broker.bootstrap, topic, count), make_records("jp", count))


def test_consumer_assign_and_offsets_for_times(broker, java):
    topic = "java-consume"
    create_topic(broker.bootstrap, topic)
    count = 120
    java.run("ProduceDefault", broker.bootstrap, topic, "jc", count, BASE_TIMESTAMP_MS)

    target = 45
    lines = java.run("ConsumeAssign", broker.bootstrap, topic, 0, BASE_TIMESTAMP_MS + target)
    by_event = {}
    for line in lines:
        by_event.setdefault(line["event"], []).append(line)
    assert by_event["offsets"] == [{"event": "offsets", "beginning": 0, "end": count}]
    assert by_event["offsetForTime"] == [
        {"event": "offsetForTime", "offset": target, "timestamp": BASE_TIMESTAMP_MS + target}]
    got = [Record(r["key"].encode(), r["value"].encode(), [(k, v.encode()) for k, v in r["headers"]],
                  r["timestamp"], r["offset"]) for r in by_event.get("record", [])]
    assert_records(got, make_records("jc", count)[target:], first_offset=target)
    assert all(r["timestampType"] == "CreateTime" for r in by_event["record"])
    assert by_event["done"] == [{"event": "done", "position": count}]

    # A timestamp after every record: no offset.
    lines = java.run("ConsumeAssign", broker.bootstrap, topic, 0, BASE_TIMESTAMP_MS + count + 1000)
    assert {"event": "offsetForTime", "offset": None, "timestamp": None} in lines


def test_admin_round_trip(broker, java):
    assert_admin_round_trip(java, broker.bootstrap, "java-admin")
