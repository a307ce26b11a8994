"""Dynamic broker configs through confluent-kafka's AdminClient (librdkafka).

Guards IncrementalAlterConfigs / AlterConfigs / DescribeConfigs on BROKER resources as
librdkafka speaks them: a per-broker log.segment.bytes takes effect at once on a live
topic without an override (its partition rolls small segments) and not on one with an
override; sources and read-only flags describe back as Kafka reports them; a
static config is refused; and everything survives a broker restart. (librdkafka cannot
address the cluster-default resource "" — its ConfigResource needs a name — so that level
is covered by the Rust socket tests in crates/strata-broker/tests/api/broker_configs.rs.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from records import ADMIN_TIMEOUT_S, admin, create_topic

BROKER_OVERRIDES = {"log.retention.hours": "48"}


def segment_files(log_dir: Path, topic: str) -> int:
    return len(list((log_dir / f"{topic}-0").glob("*.log")))


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1, "acks": "all"})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=b"v" * 300, partition=0)
        producer.flush(30)
    assert producer.flush(30) == 0, "records still queued"


def alter(client, name: str, *entries: ConfigEntry) -> None:
    resource = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=list(entries))
    client.incremental_alter_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)


def describe_broker(client, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.BROKER, name)
    return client.describe_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)


def describe_topic(client, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return client.describe_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)


def test_dynamic_broker_configs_apply_live_and_survive_restart(broker_factory):
    b = broker_factory(BROKER_OVERRIDES).start()
    create_topic(b.bootstrap, "plain")
    create_topic(b.bootstrap, "pinned", config={"segment.bytes": "1048576"})
    client = admin(b.bootstrap)

    alter(client, "1", ConfigEntry("log.segment.bytes", "1024", incremental_operation=AlterConfigOpType.SET))
    produce(b.bootstrap, "plain", 12)
    produce(b.bootstrap, "pinned", 12)
    assert segment_files(b.log_dir, "plain") >= 3, "topic without override rolls at the new default"
    assert segment_files(b.log_dir, "pinned") == 1, "topic override wins over the broker default"

    alter(client, "1", ConfigEntry("log.retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET))
    entries = describe_broker(client, "1")
    seg = entries["log.segment.bytes"]
    assert seg.value == "1024"
    assert ConfigSource(seg.source) == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert not seg.is_read_only
    ret = entries["log.retention.ms"]
    assert ret.value == "7200000"
    assert ConfigSource(ret.source) == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert entries["log.dirs"].is_read_only

    topic = describe_topic(client, "plain")
    assert topic["segment.bytes"].value == "1024"
    assert ConfigSource(topic["segment.bytes"].source) == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert topic["retention.ms"].value == "7200000"

    # A static config cannot change at runtime: Kafka's INVALID_REQUEST and message.
    bad = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.dirs", "/elsewhere", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as refused:
        client.incremental_alter_configs([bad])[bad].result(timeout=ADMIN_TIMEOUT_S)
    err = refused.value.args[0]
    assert err.code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically" in err.str()

    del client
    assert b.stop() == 0
    b.start()
    client = admin(b.bootstrap)
    entries = describe_broker(client, "1")
    assert entries["log.segment.bytes"].value == "1024"
    assert entries["log.retention.ms"].value == "7200000"
    before = segment_files(b.log_dir, "plain")
    produce(b.bootstrap, "plain", 12)
    assert segment_files(b.log_dir, "plain") >= before + 2, "still applied after the restart"

    alter(client, "1", ConfigEntry("log.segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE))
    topic = describe_topic(client, "plain")
    assert topic["segment.bytes"].value == "1073741824"
    assert ConfigSource(topic["segment.bytes"].source) == ConfigSource.DEFAULT_CONFIG
