"""Cluster mode end to end: three brokers with their metadata in a real etcd, driven by the Java
client, confluent-kafka (librdkafka) and kcat.

Guards issue 14's promises as clients see them: partitions led by different brokers, every
record back in order at its offset through each client; a consumer group whose coordinator is
not the bootstrap broker; a SIGKILLed broker's partitions leaderless within the session timeout
while the others keep taking records, and all of them back after a restart; a new controller
after the controller's SIGKILL (the failover time is printed: `pytest -s`); one etcd member of
three lost changes nothing, all of etcd lost keeps produce and fetch and refuses CreateTopics
with a clear error until etcd is back; a broker restarted after its topic was deleted while it
was down deletes that topic's partitions and keeps one etcd never knew (never delete on a guess).

Each broker is asked directly for its Metadata (`cluster.metadata`): the clients cache and
route metadata, and a failover check needs what a given broker says now.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from admin_checks import assert_admin_round_trip
from cluster import (CLUSTER_SETTINGS, StrataCluster, create_topic_raw, delete_records_error, fetch_error,
                     find_coordinator, list_offsets_error, offset_for_leader_epoch_error, produce_error,
                     wait_until)
from consumer_group_describe import describe
from records import BASE_TIMESTAMP_MS, Record, admin, assert_records, consume_confluent, create_topic, make_records

RACKS = ["r1", "r2", "r3"]
PARTITIONS = 6
SESSION_TIMEOUT_S = int(CLUSTER_SETTINGS["broker.session.timeout.ms"]) / 1000
# Kafka's REQUEST_TIMED_OUT: what a broker answers when etcd cannot take a metadata change.
REQUEST_TIMED_OUT = 7
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


# --- clients ------------------------------------------------------------------------------

def kcat(*args: str) -> str:
    if KCAT is None:
        pytest.fail("kcat not found: run scripts/install-test-deps.sh")
    proc = subprocess.run([KCAT, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"kcat {' '.join(args)} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr}"
    return proc.stdout


def produce(bootstrap: str, topic: str, records: list[Record], partitions: list[int],
            timeout_s: float = 60) -> list[tuple[int, int]]:
    """Produces records[i] to partitions[i] with librdkafka (acks=all) and returns each record's
    (partition, offset); fails unless every record is acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": int(timeout_s * 1000)})
    acks: list[tuple[int, int] | None] = [None] * len(records)
    errors: list[str] = []

    def on_delivery(index: int):
        def report(err, msg):
            if err is not None:
                errors.append(f"record {index}: {err}")
            else:
                acks[index] = (msg.partition(), msg.offset())
        return report

    for i, (r, p) in enumerate(zip(records, partitions)):
        producer.produce(topic, key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp or 0,
                         partition=p, on_delivery=on_delivery(i))
        producer.poll(0)
    remaining = producer.flush(timeout_s + 10)
    assert not errors, f"{len(errors)} records failed, first: {errors[:3]}"
    assert remaining == 0 and all(a is not None for a in acks), f"{remaining} records not acknowledged"
    return acks  # type: ignore[return-value]


def spread(count: int, partitions: list[int]) -> list[int]:
    """Record i → partitions[i % len]: round robin over the given partitions."""
    return [partitions[i % len(partitions)] for i in range(count)]


def kcat_produce(bootstrap: str, topic: str, partition: int, prefix: str, count: int, tmp_path) -> list[Record]:
    """Produces `count` key:value lines to one partition with kcat (one header for all of them);
    returns the records as they must come back (CreateTime is kcat's clock: not checked)."""
    lines = [f"{prefix}-key-{i}:{prefix}-value-{i}" for i in range(count)]
    data = tmp_path / f"{prefix}.txt"
    data.write_text("\n".join(lines) + "\n")
    header = f"{prefix}-h"
    kcat("-b", bootstrap, "-P", "-t", topic, "-p", str(partition), "-K", ":", "-H", f"h={header}",
         "-X", "acks=all", "-m", "30", "-l", str(data))
    return [Record(f"{prefix}-key-{i}".encode(), f"{prefix}-value-{i}".encode(), [("h", header.encode())])
            for i in range(count)]


def kcat_consume(bootstrap: str, topic: str, partition: int) -> list[Record]:
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning", "-e", "-J",
               "-m", "30")
    got = []
    for line in out.splitlines():
        m = json.loads(line)
        raw = m.get("headers") or []
        headers = [(raw[i], raw[i + 1].encode()) for i in range(0, len(raw), 2)]
        got.append(Record(m["key"].encode(), m["payload"].encode(), headers, m["ts"], m["offset"]))
    return got


def java_consume_all(java, bootstrap: str, topic: str) -> dict[int, list[Record]]:
    by_partition: dict[int, list[Record]] = {}
    for line in java.run("ConsumeAll", bootstrap, topic):
        if line["event"] == "record":
            by_partition.setdefault(line["partition"], []).append(Record(
                line["key"].encode(), line["value"].encode(), [(k, v.encode()) for k, v in line["headers"]],
                line["timestamp"], line["offset"]))
    return by_partition


def per_partition(records: list[Record], partitions: list[int]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for r, p in zip(records, partitions):
        out.setdefault(p, []).append(r)
    return out


# --- cluster views ------------------------------------------------------------------------

def leaders(cluster: StrataCluster, topic: str, node_id: int | None = None) -> dict[int, int]:
    return cluster.metadata(node_id, [topic]).leaders(topic)


def epochs(cluster: StrataCluster, topic: str) -> dict[int, int]:
    return {p: info.leader_epoch for p, info in cluster.metadata(None, [topic]).topics[topic].partitions.items()}


def wait_for_leaders(cluster: StrataCluster, topic: str, partitions: int) -> dict[int, int]:
    """Waits until every running broker shows a leader for each partition, the same one."""
    def agreed():
        views = [leaders(cluster, topic, node_id) for node_id in cluster.running()]
        first = views[0]
        if len(first) == partitions and all(v >= 0 for v in first.values()) and all(v == first for v in views):
            return first
        return None

    return wait_until(agreed, 30, f"every broker to agree on leaders of {topic}'s {partitions} partitions")


def new_cluster(cluster_factory, endpoints: str) -> StrataCluster:
    return cluster_factory(endpoints, racks=RACKS)


# --- tests --------------------------------------------------------------------------------

def test_partitions_on_several_brokers_round_trip_through_every_client(etcd, cluster_factory, java, tmp_path):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic, count = "spread", 3000
    create_topic(cluster.bootstrap, topic, PARTITIONS)
    lead = wait_for_leaders(cluster, topic, PARTITIONS)
    assert len(set(lead.values())) >= 2, f"all partitions on one broker: {lead}"
    md = cluster.metadata(None, [topic])
    assert {b.rack for b in md.brokers.values()} == set(RACKS)
    # DescribeCluster on any broker lists every live broker and the controller.
    for node_id, b in cluster.running().items():
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        desc = admin.describe_cluster(request_timeout=10).result()
        assert sorted(n.id for n in desc.nodes) == sorted(cluster.running()), node_id
        assert desc.controller.id == cluster.controller()

    targets = spread(count, list(range(PARTITIONS)))
    per_client = count // PARTITIONS
    expected: dict[int, list[Record]] = {p: [] for p in range(PARTITIONS)}

    # librdkafka: acknowledged offsets are consecutive per partition.
    ck = make_records("ck", count)
    acks = produce(cluster.bootstrap, topic, ck, targets)
    assert acks == [(targets[i], i // PARTITIONS) for i in range(count)]
    for p, rs in per_partition(ck, targets).items():
        expected[p] += rs

    # The Java producer (idempotent, acks=all) to every partition's leader.
    lines = java.run("ProducePartitions", cluster.bootstrap, topic, "jv", count, PARTITIONS, BASE_TIMESTAMP_MS)
    assert [(a["partition"], a["offset"]) for a in lines if a["event"] == "ack"] == [
        (targets[i], per_client + i // PARTITIONS) for i in range(count)]
    jv = make_records("jv", count)
    for p, rs in per_partition(jv, targets).items():
        expected[p] += rs

    # kcat: one run per partition.
    for p in range(PARTITIONS):
        expected[p] += kcat_produce(cluster.bootstrap, topic, p, f"kc{p}", per_client, tmp_path)

    total = 3 * per_client
    for p in range(PARTITIONS):
        assert len(expected[p]) == total
        assert_records(consume_confluent(cluster.bootstrap, topic, total, partition=p), expected[p])
        assert_records(kcat_consume(cluster.bootstrap, topic, p), expected[p])
    from_java = java_consume_all(java, cluster.bootstrap, topic)
    assert sorted(from_java) == list(range(PARTITIONS))
    for p in range(PARTITIONS):
        assert_records(from_java[p], expected[p])


NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_LEADER_EPOCH = 75


def test_partition_requests_to_a_broker_that_does_not_lead_are_refused(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic = "led"
    create_topic(cluster.bootstrap, topic, PARTITIONS)
    lead = wait_for_leaders(cluster, topic, PARTITIONS)
    p, leader = next(iter(lead.items()))
    other = next(n for n in cluster.running() if n != leader)
    at_other = cluster.broker(other).bootstrap
    at_leader = cluster.broker(leader).bootstrap
    assert produce_error(at_other, topic, p) == NOT_LEADER_OR_FOLLOWER
    assert fetch_error(at_other, topic, p) == NOT_LEADER_OR_FOLLOWER
    assert list_offsets_error(at_other, topic, p) == NOT_LEADER_OR_FOLLOWER
    assert delete_records_error(at_other, topic, p) == NOT_LEADER_OR_FOLLOWER
    assert offset_for_leader_epoch_error(at_other, topic, p) == NOT_LEADER_OR_FOLLOWER
    # The leader serves them, and checks a client's leader epoch first, as Kafka does.
    epoch = cluster.metadata(None, [topic]).topics[topic].partitions[p].leader_epoch
    assert fetch_error(at_leader, topic, p, epoch) == 0
    assert list_offsets_error(at_leader, topic, p, epoch) == 0
    assert delete_records_error(at_leader, topic, p) == 0
    assert offset_for_leader_epoch_error(at_leader, topic, p, epoch) == 0
    assert fetch_error(at_leader, topic, p, epoch + 1) == UNKNOWN_LEADER_EPOCH
    assert list_offsets_error(at_leader, topic, p, epoch + 1) == UNKNOWN_LEADER_EPOCH


def test_admin_requests_work_on_every_broker(etcd, cluster_factory, java):
    """The Java Admin walk (create, describe, alter configs, delete) through each broker in turn:
    every broker can take admin requests, whichever one is the controller."""
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    for node_id, b in cluster.running().items():
        assert_admin_round_trip(java, b.bootstrap, f"java-admin-{node_id}")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_coordinator_on_another_broker_commits_and_resumes(etcd, cluster_factory, protocol):
    """A group coordinated by a broker other than the one the client bootstraps from: the first
    member consumes half and commits, the second resumes exactly there. With `consumer`, the
    members speak KIP-848 (ConsumerGroupHeartbeat to that coordinator, which assigns)."""
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic, count = "grouped", 600
    create_topic(cluster.bootstrap, topic, PARTITIONS)
    wait_for_leaders(cluster, topic, PARTITIONS)
    produce(cluster.bootstrap, topic, make_records("g", count), spread(count, list(range(PARTITIONS))))

    # Bootstrap from broker 1 only; pick a group whose coordinator is another broker.
    entry = cluster.broker(1).bootstrap

    def coordinator(group: str) -> int | None:
        c = find_coordinator(entry, group)
        return c.node_id if c.error == 0 else None

    group = None
    for i in range(50):
        candidate = f"resume-{i}"
        node = wait_until(lambda: coordinator(candidate), 30, f"a coordinator for {candidate}")
        if node != 1:
            group = candidate
            break
    assert group is not None, "every group tried is coordinated by broker 1"
    # Every broker names the same coordinator (a broker still applying the new offsets topic
    # answers COORDINATOR_NOT_AVAILABLE for a moment, as Kafka's do while loading).
    wait_until(lambda: {find_coordinator(b.bootstrap, group).node_id for b in cluster.brokers.values()} == {node},
               30, f"every broker to name broker {node} as {group}'s coordinator")

    def member() -> Consumer:
        conf = {"bootstrap.servers": entry, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest"}
        # KIP-848 members take their session timeout from the broker.
        conf.update({"group.protocol": "consumer"} if protocol == "consumer" else {"session.timeout.ms": 6000})
        consumer = Consumer(conf)
        consumer.subscribe([topic])
        return consumer

    def take(consumer: Consumer, n: int) -> list[tuple[int, int]]:
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=n - len(got), timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                got.append((msg.partition(), msg.offset()))
        assert len(got) == n, f"consumed {len(got)} of {n}"
        return got

    first = member()
    half = take(first, count // 2)
    if protocol == "consumer":
        # The coordinator holds it as a KIP-848 consumer group with the member in it.
        d = describe(cluster.broker(node).bootstrap, group)
        assert d.error_code == 0 and d.state == "Stable" and len(d.members) == 1, d
        assert sorted(d.members[0].assignment.get(topic, [])) == list(range(PARTITIONS)), d
    committed = {tp.partition: tp.offset for tp in first.commit(asynchronous=False)}
    first.close()
    for p in range(PARTITIONS):
        consumed = [o for q, o in half if q == p]
        if consumed:
            assert committed[p] == max(consumed) + 1

    second = member()
    rest = take(second, count - len(half))
    seen = second.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    second.close()
    assert {tp.partition: tp.offset for tp in seen if tp.offset >= 0} == {
        p: o for p, o in committed.items() if o >= 0}
    # Resumed where the first member committed: every record exactly once over both members.
    for p in range(PARTITIONS):
        resumed = [o for q, o in rest if q == p]
        if resumed:
            assert resumed[0] == max(committed.get(p, 0), 0)
    assert sorted(half + rest) == sorted((p, o) for p in range(PARTITIONS) for o in range(count // PARTITIONS))


def test_sigkilled_broker_goes_leaderless_others_keep_serving_and_all_returns(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic, count = "victim", 600
    create_topic(cluster.bootstrap, topic, PARTITIONS)
    before = wait_for_leaders(cluster, topic, PARTITIONS)
    epochs_before = epochs(cluster, topic)
    controller = cluster.controller()
    # The victim leads some partitions and is not the controller (that is the next test).
    victim = next(n for n in sorted(set(before.values())) if n != controller)
    lost = sorted(p for p, n in before.items() if n == victim)
    kept = sorted(p for p, n in before.items() if n != victim)
    assert lost and kept

    all_parts = list(range(PARTITIONS))
    records = make_records("pre", count)
    targets = spread(count, all_parts)
    produce(cluster.bootstrap, topic, records, targets)
    expected = per_partition(records, targets)

    killed_at = time.monotonic()
    cluster.broker(victim).kill()
    survivor = cluster.any_running()
    survivor_id = next(n for n, b in cluster.brokers.items() if b is survivor)

    def leaderless():
        now = leaders(cluster, topic, survivor_id)
        return all(now[p] == -1 for p in lost) and all(now[p] == before[p] for p in kept)

    wait_until(leaderless, SESSION_TIMEOUT_S + 5, f"partitions {lost} of broker {victim} to show no leader")
    took = time.monotonic() - killed_at
    print(f"\nbroker {victim} SIGKILLed: its partitions showed leader -1 after {took:.2f} s "
          f"(session timeout {SESSION_TIMEOUT_S:g} s)")
    assert took <= SESSION_TIMEOUT_S + 2, f"leader -1 only after {took:.2f} s"
    for node_id in cluster.running():
        assert victim not in cluster.metadata(node_id).brokers

    # Producers to the other brokers' partitions are unaffected.
    survivors = ",".join(b.bootstrap for b in cluster.running().values())
    during = make_records("during", 300)
    during_targets = spread(len(during), kept)
    produce(survivors, topic, during, during_targets, timeout_s=30)
    for p, rs in per_partition(during, during_targets).items():
        expected[p] += rs

    cluster.broker(victim).start()  # same port and log dir
    assert wait_for_leaders(cluster, topic, PARTITIONS) == before
    # The controller took leadership away from the dead broker and gave it back: a new leader
    # epoch for each of its partitions (a client fences on it), the others' unchanged. Metadata
    # shows a dead leader as -1 whatever the controller decided; the epoch is what tells.
    epochs_after = epochs(cluster, topic)
    assert all(epochs_after[p] > epochs_before[p] for p in lost), (
        f"broker {victim}'s partitions {lost} kept their leader epochs: {epochs_before} -> {epochs_after}")
    assert all(epochs_after[p] == epochs_before[p] for p in kept), (
        f"partitions {kept} changed leader epochs: {epochs_before} -> {epochs_after}")
    for p in all_parts:
        assert_records(consume_confluent(cluster.bootstrap, topic, len(expected[p]), partition=p), expected[p])


def test_sigkilled_controller_is_replaced_and_create_topics_works_again(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    old = cluster.controller()
    assert create_topic_raw(cluster.broker(old).bootstrap, "before", 3).error == 0

    killed_at = time.monotonic()
    cluster.broker(old).kill()
    entry = cluster.any_running()  # CreateTopics goes to a surviving broker, not the controller
    attempts: list[tuple[float, int, str | None]] = []

    def created():
        name = f"after-{len(attempts)}"
        result = create_topic_raw(entry.bootstrap, name, 3, timeout_s=2)
        attempts.append((time.monotonic() - killed_at, result.error, result.message))
        return name if result.error == 0 else None

    name = wait_until(created, SESSION_TIMEOUT_S + 20, "CreateTopics to succeed after the controller's SIGKILL",
                      interval_s=0.05)
    took = attempts[-1][0]
    print(f"\ncontroller {old} SIGKILLed: CreateTopics succeeded again after {took:.2f} s "
          f"({len(attempts)} attempts, session timeout {SESSION_TIMEOUT_S:g} s)")
    assert took <= SESSION_TIMEOUT_S + 5, f"controller failover took {took:.2f} s: {attempts}"
    failed = [a for a in attempts if a[1] != 0]
    assert all(code == REQUEST_TIMED_OUT for _, code, _ in failed), f"unexpected errors while failing over: {failed}"

    new = cluster.controller()
    assert new != old and new in cluster.running()
    lead = wait_for_leaders(cluster, name, 3)
    assert set(lead.values()) <= set(cluster.running())


class SteadyTopic:
    """A three-partition topic on a cluster, with every record produced to it remembered."""

    def __init__(self, cluster: StrataCluster, name: str = "steady"):
        self.cluster, self.name, self.parts = cluster, name, [0, 1, 2]
        self.expected: dict[int, list[Record]] = {p: [] for p in self.parts}
        # The records carry 2024 timestamps (make_records): without this the broker's first
        # retention check (30 s after start-up) deletes them all when a slow machine stretches
        # the test past it, and the read-back finds an empty log.
        create_topic(cluster.bootstrap, name, len(self.parts), config={"retention.ms": "-1"})
        wait_for_leaders(cluster, name, len(self.parts))

    def produce(self, prefix: str, n: int = 150) -> None:
        records = make_records(prefix, n)
        targets = spread(n, self.parts)
        produce(self.cluster.bootstrap, self.name, records, targets, timeout_s=30)
        for p, rs in per_partition(records, targets).items():
            self.expected[p] += rs

    def read_back(self) -> None:
        for p in self.parts:
            got = consume_confluent(self.cluster.bootstrap, self.name, len(self.expected[p]), partition=p)
            assert_records(got, self.expected[p])


def test_one_etcd_member_down_changes_nothing(etcd_cluster, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd_cluster.endpoints)
    topic = SteadyTopic(cluster)
    topic.produce("all-up")

    # One member of three stopped: every operation works at the first try, on every broker.
    etcd_cluster.stop(0)
    for node_id, b in cluster.brokers.items():
        result = create_topic_raw(b.bootstrap, f"one-down-{node_id}", 3)
        assert result.error == 0, f"CreateTopics via broker {node_id} with one etcd member down: {result}"
    topic.produce("one-down")
    topic.read_back()


def test_all_etcd_down_keeps_produce_and_fetch_and_refuses_create_topics(etcd_cluster, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd_cluster.endpoints)
    topic = SteadyTopic(cluster)
    topic.produce("all-up")

    # All of etcd stopped: produce and fetch go on past the session timeout...
    etcd_cluster.stop_all()
    stopped_at = time.monotonic()
    batches = 0
    while time.monotonic() - stopped_at < SESSION_TIMEOUT_S + 1:
        topic.produce(f"no-etcd-{batches}", 30)
        batches += 1
    topic.read_back()
    # ...and a metadata change fails with an error that says why.
    result = create_topic_raw(cluster.any_running().bootstrap, "no-etcd", 3)
    assert result.error == REQUEST_TIMED_OUT, result
    assert result.message and "etcd" in result.message.lower(), result

    etcd_cluster.start_all()
    attempt = 0

    def created():
        nonlocal attempt
        attempt += 1
        return create_topic_raw(cluster.any_running().bootstrap, f"etcd-back-{attempt}", 3, timeout_s=5).error == 0

    wait_until(created, 30, "CreateTopics to succeed once etcd is back")
    topic.produce("etcd-back")
    topic.read_back()


# The partition.metadata Strata (like Kafka) writes: version 0, the topic id in unpadded base64url,
# no newline after it.
PARTITION_METADATA = re.compile(r"version: 0\ntopic_id: [A-Za-z0-9_-]{22}")


def partition_dirs(log_dir: Path, topic: str) -> list[str]:
    """The live directories of `topic`'s partitions in `log_dir` (not `<tp>.<uuid>-delete` ones)."""
    pattern = re.compile(re.escape(topic) + r"-\d+")
    return sorted(d.name for d in log_dir.iterdir() if d.is_dir() and pattern.fullmatch(d.name))


def dir_contents(path: Path) -> dict[str, bytes]:
    """partition.metadata and the segments' records: what deleting or rewriting would change."""
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())
            if f.name == "partition.metadata" or f.suffix == ".log"}


def test_restarted_broker_deletes_only_partitions_etcd_confirms_are_gone(etcd, cluster_factory):
    """A topic deleted while a broker was down: at restart the broker deletes its partitions (etcd
    keeps a `deleted-topics/<id>` marker) and keeps a partition directory etcd never knew, as
    Kafka keeps a stray it cannot prove is gone."""
    cluster = cluster_factory(etcd.endpoint, count=2)
    parts = [0, 1, 2, 3]
    for topic in ("gone", "kept"):
        create_topic(cluster.bootstrap, topic, len(parts))
    gone_leaders = wait_for_leaders(cluster, "gone", len(parts))
    kept_leaders = wait_for_leaders(cluster, "kept", len(parts))
    controller = cluster.controller()
    # X is not the controller (the deletion must not wait for a failover) and holds partitions
    # of both topics.
    x = next(n for n in cluster.brokers if n != controller)
    other = cluster.broker(controller)
    x_gone = sorted(p for p, n in gone_leaders.items() if n == x)
    x_kept = sorted(p for p, n in kept_leaders.items() if n == x)
    assert x_gone and x_kept, f"broker {x} leads no partition of gone ({gone_leaders}) or kept ({kept_leaders})"

    targets = spread(40, parts)
    produce(cluster.bootstrap, "gone", make_records("gone", 40), targets, timeout_s=30)
    kept = make_records("kept", 40)
    produce(cluster.bootstrap, "kept", kept, targets, timeout_s=30)
    expected = per_partition(kept, targets)

    broker_x = cluster.broker(x)
    broker_x.kill()
    log_dir = broker_x.log_dir
    assert partition_dirs(log_dir, "gone") == [f"gone-{p}" for p in x_gone]

    # Deleted through the other broker while X is down: only etcd's marker tells X.
    client = admin(other.bootstrap)
    client.delete_topics(["gone"], operation_timeout=30)["gone"].result(timeout=30)
    assert "gone" not in cluster.metadata(controller).topics

    # A partition of a topic etcd has never known: a copy of one of X's with a fresh topic id.
    stranger = log_dir / "stranger-0"
    shutil.copytree(log_dir / f"kept-{x_kept[0]}", stranger)
    meta = (stranger / "partition.metadata").read_text()
    assert PARTITION_METADATA.fullmatch(meta), f"unexpected partition.metadata format: {meta!r}"
    stranger_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    (stranger / "partition.metadata").write_text(f"version: 0\ntopic_id: {stranger_id}")
    planted = dir_contents(stranger)

    left: list[str] = []

    def gone_deleted() -> bool:
        left[:] = partition_dirs(log_dir, "gone")
        return not left

    restarted_at = time.monotonic()
    broker_x.start()  # same port and log dir
    try:
        wait_until(gone_deleted, 10, f"broker {x} to delete (or rename to *-delete) its partitions of gone")
    except AssertionError as e:
        raise AssertionError(f"{e}; still there: {left}") from None
    print(f"\nbroker {x} restarted: deleted topic gone's partitions {x_gone} after "
          f"{time.monotonic() - restarted_at:.2f} s")
    # The same pass over X's logs looked at stranger-0: kept, byte for byte, with a WARN.
    assert stranger.is_dir(), (f"broker {x} deleted stranger-0, a partition etcd never knew: "
                               f"{sorted(p.name for p in log_dir.iterdir() if not p.name.startswith('__'))}")
    assert dir_contents(stranger) == planted, "stranger-0's files changed"
    warned = re.compile(r"WARN .*does not know this partition; keeping it untouched tp=stranger-0 ")
    wait_until(lambda: warned.search(broker_x.output_files[-1].read_text()), 10,
               f"broker {x} to WARN that it keeps stranger-0")
    for node_id in cluster.running():
        assert {"gone", "stranger"}.isdisjoint(cluster.metadata(node_id).topics)

    # X serves its partitions of kept as before.
    assert wait_for_leaders(cluster, "kept", len(parts)) == kept_leaders
    more = make_records("kept-after", 20)
    more_targets = spread(len(more), x_kept)
    produce(broker_x.bootstrap, "kept", more, more_targets, timeout_s=30)
    for p, rs in per_partition(more, more_targets).items():
        expected[p] += rs
    for p in parts:
        assert_records(consume_confluent(cluster.bootstrap, "kept", len(expected[p]), partition=p), expected[p])
    assert stranger.is_dir() and dir_contents(stranger) == planted
