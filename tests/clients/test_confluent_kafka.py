"""confluent-kafka (librdkafka): every codec, manual-assign consumption, and the admin API.

Guards Produce/Fetch with each compression codec, ListOffsets via watermarks, and
CreateTopics / DescribeConfigs / IncrementalAlterConfigs / AlterConfigs / DeleteTopics
as librdkafka speaks them.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from records import ADMIN_TIMEOUT_S, admin, assert_records, consume_confluent, create_topic, end_offset, make_records

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def produce_all(bootstrap: str, topic: str, records, **conf) -> list[int]:
    """Produces records to partition 0 and returns their acknowledged offsets in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **conf})
    results: list = [None] * len(records)

    def report(index):
        def on_delivery(err, msg):
            results[index] = err if err is not None else msg.offset()
        return on_delivery

    for i, r in enumerate(records):
        producer.produce(topic, value=r.value, key=r.key, headers=r.headers, timestamp=r.timestamp,
                         partition=0, on_delivery=report(i))
        producer.poll(0)
    assert producer.flush(60) == 0, "records still queued after 60 s"
    errors = [(i, e) for i, e in enumerate(results) if not isinstance(e, int)]
    assert not errors, f"delivery failed: {errors[:5]}"
    return results


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume_each_codec(broker, codec):
    topic = f"codec-{codec}"
    create_topic(broker.bootstrap, topic)
    records = make_records(codec, 300)
    offsets = produce_all(broker.bootstrap, topic, records, **{"compression.type": codec, "acks": "all"})
    assert offsets == list(range(len(records)))
    assert end_offset(broker.bootstrap, topic) == len(records)

    assert_records(consume_confluent(broker.bootstrap, topic, len(records)), records)
    # Start in the middle of a (compressed) batch: the client must drop the records before it.
    assert_records(consume_confluent(broker.bootstrap, topic, 100, start_offset=200), records[200:], first_offset=200)


def describe_topic_config(client, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return client.describe_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)


# Legacy AlterConfigs is exercised on purpose: librdkafka-based tools still send it.
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_admin_create_describe_alter_delete(broker):
    topic = "admin-confluent"
    create_topic(broker.bootstrap, topic, partitions=2,
                 config={"cleanup.policy": "compact", "retention.ms": "86400000"})

    # The AdminClient must outlive its futures: a destroyed handle fails them.
    client = admin(broker.bootstrap)
    entries = describe_topic_config(client, topic)
    assert entries["cleanup.policy"].value == "compact"
    assert ConfigSource(entries["cleanup.policy"].source) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert entries["retention.ms"].value == "86400000"
    assert entries["segment.bytes"].value == "1073741824"
    assert ConfigSource(entries["segment.bytes"].source) == ConfigSource.DEFAULT_CONFIG

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    client.incremental_alter_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)
    entries = describe_topic_config(client, topic)
    assert entries["retention.ms"].value == "3600000"
    assert entries["cleanup.policy"].value == "delete"
    assert ConfigSource(entries["cleanup.policy"].source) == ConfigSource.DEFAULT_CONFIG

    # Legacy AlterConfigs replaces the whole set: retention.ms falls back to its default.
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"max.message.bytes": "65536"})
    client.alter_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)
    entries = describe_topic_config(client, topic)
    assert entries["max.message.bytes"].value == "65536"
    assert entries["retention.ms"].value == "604800000"

    # An unknown config name is refused rather than stored.
    bad = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException):
        client.incremental_alter_configs([bad])[bad].result(timeout=ADMIN_TIMEOUT_S)

    client.delete_topics([topic], operation_timeout=ADMIN_TIMEOUT_S)[topic].result(timeout=ADMIN_TIMEOUT_S)
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while topic in client.list_topics(timeout=ADMIN_TIMEOUT_S).topics:
        assert time.monotonic() < deadline, f"{topic} still listed after delete"
        time.sleep(0.1)
