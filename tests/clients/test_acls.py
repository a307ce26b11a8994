"""ACLs seen by real clients (issue 17): the Java Admin creates, lists and deletes ACLs
(CreateAcls, DescribeAcls, DeleteAcls, `AclOps.java`), and librdkafka consumers that
authenticate with SASL PLAIN as different users get what the standard authorizer decides:
a prefixed ALLOW lets alice read, a literal DENY overrides bob's wildcard ALLOW, carol (no
ACL) gets TOPIC_AUTHORIZATION_FAILED and does not see the topic in Metadata. ACLs survive a
restart and a deleted ACL stops access at once.

The PLAINTEXT listener's `User:ANONYMOUS` is the super user that administers ACLs here.
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from broker import free_port
from records import create_topic

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret" user_carol="carol-secret";')
TOPIC = "orders-1"
ALICE_READ = "TOPIC:PREFIXED:orders-:User:alice:READ:ALLOW"
BOB_READ_ALL = "TOPIC:LITERAL:*:User:bob:READ:ALLOW"
BOB_DENIED = "TOPIC:LITERAL:orders-1:User:bob:READ:DENY"
# librdkafka looks up the (unused) group's coordinator even for assigned partitions.
GROUPS = "GROUP:PREFIXED:unused-:User:*:READ:ALLOW"


def start_secured(broker_factory):
    broker = broker_factory({
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }, keep_port=True)
    broker.port = free_port()
    sasl = f"127.0.0.1:{free_port()}"
    broker.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://{sasl}"
    broker.start()
    return broker, sasl


def sasl_config(sasl: str, user: str) -> dict:
    return {
        "bootstrap.servers": sasl,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


def read_as(sasl: str, user: str, count: int) -> tuple[list[bytes], int | None]:
    """Reads TOPIC from the start as `user` in a group of its own (librdkafka reports a topic it
    may not describe or read as a consumer error only for subscriptions): the values, or the
    error code."""
    consumer = Consumer({**sasl_config(sasl, user), "group.id": f"unused-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([TOPIC])
        values: list[bytes] = []
        for _ in range(300):
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return values, msg.error().code()
            values.append(msg.value())
            if len(values) == count:
                return values, None
        return values, None
    finally:
        consumer.close()


def topics_seen(sasl: str, user: str) -> set[str]:
    return set(AdminClient(sasl_config(sasl, user)).list_topics(timeout=15).topics)


def acls(java, bootstrap: str) -> set[tuple]:
    return {(l["resource_type"], l["pattern_type"], l["name"], l["principal"], l["host"],
             l["operation"], l["permission"])
            for l in java.run("AclOps", bootstrap, "list") if l["event"] == "acl"}


def test_java_admin_acls_decide_what_sasl_users_read(broker_factory, java):
    broker, sasl = start_secured(broker_factory)
    create_topic(broker.bootstrap, TOPIC, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    values = [f"v{i}".encode() for i in range(10)]
    for v in values:
        producer.produce(TOPIC, v, partition=0)
    assert producer.flush(30) == 0

    # Nobody but the super user reads before a topic ACL exists.
    assert java.run("AclOps", broker.bootstrap, "create", GROUPS)[-1] == {"event": "created", "count": 1}
    assert read_as(sasl, "alice", 10)[1] == KafkaError.TOPIC_AUTHORIZATION_FAILED

    created = java.run("AclOps", broker.bootstrap, "create", ALICE_READ, BOB_READ_ALL, BOB_DENIED)
    assert created[-1] == {"event": "created", "count": 3}
    expected = {
        ("GROUP", "PREFIXED", "unused-", "User:*", "*", "READ", "ALLOW"),
        ("TOPIC", "PREFIXED", "orders-", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "LITERAL", "*", "User:bob", "*", "READ", "ALLOW"),
        ("TOPIC", "LITERAL", "orders-1", "User:bob", "*", "READ", "DENY"),
    }
    assert acls(java, broker.bootstrap) == expected

    assert read_as(sasl, "alice", 10) == (values, None)
    assert read_as(sasl, "bob", 10)[1] == KafkaError.TOPIC_AUTHORIZATION_FAILED  # deny wins
    assert read_as(sasl, "carol", 10)[1] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert TOPIC in topics_seen(sasl, "alice")  # READ implies DESCRIBE
    assert TOPIC not in topics_seen(sasl, "carol")

    # ACLs are kept across a restart.
    broker.stop()
    broker.start()
    assert acls(java, broker.bootstrap) == expected
    assert read_as(sasl, "alice", 10) == (values, None)

    # Deleting alice's ACL takes her access away at once.
    deleted = java.run("AclOps", broker.bootstrap, "delete", ALICE_READ)
    assert [(d["name"], d["principal"]) for d in deleted if d["event"] == "deleted"] == [
        ("orders-", "User:alice")]
    assert acls(java, broker.bootstrap) == expected - {
        ("TOPIC", "PREFIXED", "orders-", "User:alice", "*", "READ", "ALLOW")}
    assert read_as(sasl, "alice", 10)[1] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert TOPIC not in topics_seen(sasl, "alice")
