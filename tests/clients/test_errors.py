"""Errors the broker must send and clients must surface: INVALID_RECORD, MESSAGE_TOO_LARGE.

Each case checks the broker's answer (the client's own size pre-check is raised out of the
way) and that a rejected batch leaves nothing behind: the next good record gets offset 0.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, Producer

from records import create_topic, end_offset

TIMEOUT_S = 60


def produce_one(bootstrap: str, topic: str, key: bytes | None, value: bytes, **conf):
    """Produces one record and returns (error or None, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "compression.type": "none",
                         "message.timeout.ms": 30000, **conf})
    result = {}

    def on_delivery(err, msg):
        result["err"], result["offset"] = err, msg.offset()

    producer.produce(topic, value=value, key=key, partition=0, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0
    return result["err"], result["offset"]


def test_compacted_topic_rejects_record_without_key(broker):
    topic = "compacted"
    create_topic(broker.bootstrap, topic, config={"cleanup.policy": "compact"})

    err, _ = produce_one(broker.bootstrap, topic, None, b"no key")
    assert err is not None and err.code() == KafkaError.INVALID_RECORD, f"got {err}"
    assert end_offset(broker.bootstrap, topic) == 0

    err, offset = produce_one(broker.bootstrap, topic, b"k", b"with key")
    assert err is None and offset == 0


def test_record_over_topic_max_message_bytes_is_rejected(broker):
    topic = "small-messages"
    create_topic(broker.bootstrap, topic, config={"max.message.bytes": "2048"})

    err, _ = produce_one(broker.bootstrap, topic, b"k", b"x" * 4096)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, f"got {err}"
    assert end_offset(broker.bootstrap, topic) == 0

    err, offset = produce_one(broker.bootstrap, topic, b"k", b"x" * 1024)
    assert err is None and offset == 0


def test_record_over_broker_message_max_bytes_is_rejected(broker):
    topic = "default-limit"
    create_topic(broker.bootstrap, topic)
    # The broker default message.max.bytes is 1048588; raise the client's own limit well above it.
    big = b"y" * (1_200_000)
    err, _ = produce_one(broker.bootstrap, topic, b"k", big,
                         **{"message.max.bytes": 4_000_000, "batch.size": 4_000_000,
                            "receive.message.max.bytes": 8_000_000})
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, f"got {err}"
    assert end_offset(broker.bootstrap, topic) == 0
