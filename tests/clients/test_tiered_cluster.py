"""The remote tier (KIP-405) in cluster mode: three brokers, a real etcd and an S3-API store
(moto) that all brokers share, a tiered topic with replication factor 3, driven by librdkafka.

Guards issue 15's "only the leader copies to the remote tier": every sealed segment of the
partition is uploaded exactly once (one `.log` object per segment base offset in the bucket,
where a copy per replica would make three), also after a failover (the new leader knows what the
old one copied and goes on from there); the leader and the followers drop copied segments
locally (local.retention.bytes; followers learn the copied offset from the catalogue); after the
leader is killed a consumer still reads every record from offset 0 through the new leader, out
of the remote tier. And "`__remote_log_metadata`'s replication factor": the topic is created
through the cluster with the configured replicas, and a broker that hosts no replica of the
metadata partition in use learns the catalogue all the same. A follower stopped while the leader
tiered and dropped everything it had catches up, rejoins the ISR and takes over an idempotent
producer without OUT_OF_ORDER_SEQUENCE, duplicates or loss. `strata log verify` passes on every
broker.
"""

from __future__ import annotations

import collections
import re
import signal
import time

import boto3
from confluent_kafka import Producer

from cluster import StrataCluster, wait_until
from records import assert_records, consume_confluent, create_topic, make_records
from test_replication import IdempotentWriter, partition_state, verify_data_dirs, wait_for_full_isr
from test_tiered_storage import TIERED_BROKER, TIERED_TOPIC, local_logs, moto, produce, s3_settings  # noqa: F401

RF = 3
BUCKET_PREFIX = "cluster-1/"


def s3_client(moto):
    return boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def uploaded_segments(moto, topic: str) -> collections.Counter:
    """`.log` objects of `topic` in the bucket, counted per 20-digit segment base offset."""
    client = s3_client(moto)
    counts: collections.Counter = collections.Counter()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="strata-tier", Prefix=BUCKET_PREFIX):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            if f"/{topic}-0-" in key and key.endswith(".log"):
                counts[key.rsplit("/", 1)[1].split("-", 1)[0]] += 1
    return counts


def tiered_cluster(cluster_factory, etcd, moto) -> StrataCluster:
    settings = {**TIERED_BROKER, **s3_settings(moto)}
    return cluster_factory(etcd.endpoint, overrides=settings)


def wait_leader_offloaded(cluster: StrataCluster, topic: str, leader: int) -> None:
    """The leader keeps only its active segment locally: everything else is in the remote tier."""
    b = cluster.broker(leader)
    wait_until(lambda: len(local_logs(b, topic, 0)) == 1, 60,
               f"broker {leader} to drop its copied segments of {topic}-0")


def test_only_the_leader_uploads_and_a_failover_serves_every_record(etcd, cluster_factory, moto, strata_bin):
    cluster = tiered_cluster(cluster_factory, etcd, moto)
    topic = "tiered-rf3"
    create_topic(cluster.bootstrap, topic, 1, config=TIERED_TOPIC, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    before = partition_state(cluster, topic, 0)
    records = make_records("t", 600, value_pad=60)
    produce(cluster.bootstrap, topic, records)
    wait_leader_offloaded(cluster, topic, before.leader)
    # Followers learn the highest copied offset from the catalogue and drop what is copied.
    for node_id in cluster.brokers:
        wait_leader_offloaded(cluster, topic, node_id)

    # Wait for a few more task rounds (interval 200 ms) so a follower that copied would show.
    time.sleep(2)
    counts = uploaded_segments(moto, topic)
    assert len(counts) >= 5, f"small segments must roll and tier: {counts}"
    copied_twice = {base: n for base, n in counts.items() if n != 1}
    assert not copied_twice, f"segments uploaded more than once (by followers): {copied_twice}"

    # The leader dies; the new one (from the ISR) serves every record from offset 0, from the
    # remote tier (it holds only its active segment locally).
    cluster.broker(before.leader).kill()

    def new_leader():
        info = partition_state(cluster, topic, 0, node_id=next(iter(cluster.running())))
        return info if info.leader not in (-1, before.leader) else None

    after = wait_until(new_leader, 30, "a new leader from the ISR")
    assert after.leader_epoch > before.leader_epoch
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in cluster.running().values())
    got = consume_confluent(bootstrap, topic, len(records), partition=0)
    assert_records(got, records)

    # The new leader tiers what it holds and keeps serving from both tiers.
    more = make_records("u", 300, base_ts=records[-1].timestamp + 1, value_pad=60)
    produce(bootstrap, topic, more)
    wait_leader_offloaded(cluster, topic, after.leader)
    got = consume_confluent(bootstrap, topic, len(records) + len(more), partition=0)
    assert_records(got, records + more)
    time.sleep(2)
    counts = uploaded_segments(moto, topic)
    copied_twice = {base: n for base, n in counts.items() if n != 1}
    assert not copied_twice, f"the new leader uploaded segments again: {copied_twice}"

    cluster.broker(before.leader).spawn()
    cluster.wait_for_members()
    wait_for_full_isr(cluster, topic, 1)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)



METADATA_TOPIC = "__remote_log_metadata"


def metadata_partition_with_records(cluster: StrataCluster) -> int:
    """The `__remote_log_metadata` partition that holds records (one user partition is tiered,
    so exactly one has any), found from the replicas' .log sizes."""
    used = set()
    for b in cluster.brokers.values():
        for d in b.log_dir.glob(f"{METADATA_TOPIC}-*"):
            if sum(f.stat().st_size for f in d.glob("*.log")) > 0:
                used.add(int(d.name.rsplit("-", 1)[1]))
    assert len(used) == 1, f"metadata records in partitions {used}"
    return used.pop()


def test_the_metadata_topic_is_replicated_and_a_broker_without_its_partition_learns_it(
        etcd, cluster_factory, moto, strata_bin):
    """`__remote_log_metadata` is created through the cluster with
    rlmm.config.remote.log.metadata.topic.replication.factor replicas (2 of 3 brokers here), so one
    broker hosts no replica of the metadata partition our topic's records go to. That broker
    still learns the catalogue (it reads the partition from its leader): as a follower it drops
    its copied local segments, and once it is the only broker left it serves every record from
    offset 0 out of the remote tier."""
    settings = {**TIERED_BROKER, **s3_settings(moto),
                "rlmm.config.remote.log.metadata.topic.replication.factor": "2"}
    cluster = cluster_factory(etcd.endpoint, overrides=settings)
    topic = "tiered-learn"
    create_topic(cluster.bootstrap, topic, 1, config=TIERED_TOPIC, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)

    def metadata_topic():
        info = cluster.metadata(None, [METADATA_TOPIC]).topics.get(METADATA_TOPIC)
        return info if info is not None and info.error == 0 and len(info.partitions) == 5 else None

    meta = wait_until(metadata_topic, 60, f"{METADATA_TOPIC} to be created in the cluster")
    assert all(len(p.replicas) == 2 for p in meta.partitions.values()), meta

    records = make_records("m", 600, value_pad=60)
    produce(cluster.bootstrap, topic, records)
    leader = partition_state(cluster, topic, 0).leader
    wait_leader_offloaded(cluster, topic, leader)
    used = metadata_partition_with_records(cluster)
    replicas = cluster.metadata(None, [METADATA_TOPIC]).topics[METADATA_TOPIC].partitions[used].replicas
    (outsider,) = set(cluster.brokers) - set(replicas)
    # Followers learn the highest copied offset from the catalogue and drop what is copied.
    for node_id in cluster.brokers:
        wait_leader_offloaded(cluster, topic, node_id)

    # Leave the outsider alone: it leads and serves both tiers from what it learned.
    for node_id in [leader] + [n for n in cluster.brokers if n not in (leader, outsider)]:
        if node_id != outsider:
            cluster.broker(node_id).kill()
    wait_until(lambda: partition_state(cluster, topic, 0, node_id=outsider).leader == outsider, 30,
               f"broker {outsider} to lead {topic}-0")
    got = consume_confluent(cluster.broker(outsider).bootstrap, topic, len(records), partition=0)
    assert_records(got, records)
    assert max(uploaded_segments(moto, topic).values()) == 1

    for b in cluster.brokers.values():
        if not b.running():
            b.spawn()
    cluster.wait_for_members()
    wait_for_full_isr(cluster, topic, 1)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)


def base_offsets(broker, topic: str) -> list[int]:
    return [int(n.split(".")[0]) for n in local_logs(broker, topic, 0)]


def remote_restarts(broker) -> list[int]:
    """The offsets `broker` restarted a follower log at from the remote tier's metadata (its log)."""
    text = "".join(p.read_text(errors="replace") for p in broker.output_files if p.exists())
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [int(m) for m in re.findall(r"restarted the follower's log at the leader's local log start.*?\bstart=(\d+)", text)]


def epoch_entries(broker, topic: str) -> list[tuple[int, int]]:
    """`leader-epoch-checkpoint` of `topic`-0 on `broker`: (epoch, start offset) pairs."""
    lines = (broker.log_dir / f"{topic}-0" / "leader-epoch-checkpoint").read_text().split("\n")
    assert lines[0] == "0", lines
    return [(int(e), int(o)) for e, o in (line.split() for line in lines[2:2 + int(lines[1])])]


def epochs_from(entries: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """The epoch of every offset from `start` on: the entry in force at `start`, then later ones."""
    at_start = [e for e, o in entries if o <= start]
    return ([(at_start[-1], start)] if at_start else []) + [(e, o) for e, o in entries if o > start]


def test_a_follower_behind_the_leaders_local_log_catches_up_and_takes_over_an_idempotent_producer(
        etcd, cluster_factory, moto, strata_bin):
    """A follower stopped (SIGSTOP) while the leader tiers and drops everything it held comes back
    more than the leader's whole local log behind and catches up as Kafka's does: the leader
    answers OFFSET_MOVED_TO_TIERED_STORAGE, the follower restarts its log (its warning names the
    offset) at the leader's local log start with the leader-epoch entries and producer state
    of the remote segment below it, holds nothing below that and fetches from there. It
    rejoins the ISR with the leader's epochs from its start on; once it is the only broker left it leads, an idempotent producer
    that wrote through every failover had no failure (no OUT_OF_ORDER_SEQUENCE: its producer state
    is right), and a consumer reads every acknowledged record exactly once from offset 0 across
    both tiers."""
    settings = {**TIERED_BROKER, **s3_settings(moto), "replica.lag.time.max.ms": "3000"}
    cluster = cluster_factory(etcd.endpoint, overrides=settings)
    topic = "tiered-catchup"
    create_topic(cluster.bootstrap, topic, 1, config=TIERED_TOPIC, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    leader = partition_state(cluster, topic, 0).leader
    laggard = next(n for n in cluster.brokers if n != leader)
    writer = IdempotentWriter(cluster.bootstrap, topic, 0)
    # Batches below segment.bytes (a stalled producer would otherwise send one larger than a segment).
    writer.producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                                "linger.ms": 2, "message.timeout.ms": 120_000, "batch.size": 1024,
                                "max.in.flight.requests.per.connection": 5})
    writer.start()
    wait_until(lambda: len(writer.acked) >= 200, 60, "200 acknowledged records")
    cluster.broker(laggard).process.send_signal(signal.SIGSTOP)

    def isr() -> list[int]:
        # The leader's view: it makes the ISR changes (a resumed broker still shows its old state).
        return sorted(partition_state(cluster, topic, 0, node_id=leader).isr)

    try:
        wait_until(lambda: laggard not in isr(), 60, f"broker {laggard} to leave the ISR")
        behind = max(base_offsets(cluster.broker(laggard), topic))
        wait_until(lambda: min(base_offsets(cluster.broker(leader), topic)) > behind + 500, 120,
                   f"the leader to tier and drop everything broker {laggard} has")
        leader_start_before = min(base_offsets(cluster.broker(leader), topic))
    finally:
        cluster.broker(laggard).process.send_signal(signal.SIGCONT)
    wait_until(lambda: isr() == sorted(cluster.brokers), 120, f"broker {laggard} to catch up and rejoin the ISR")
    # The follower restarted its log at a local log start of the leader's (which moves on while
    # it writes, so a slow follower can fall below it again and restart again), never at 0 or
    # where it had stopped; it holds nothing below its last restart.
    leader_start_after = min(base_offsets(cluster.broker(leader), topic))
    restarts = remote_restarts(cluster.broker(laggard))
    assert restarts and restarts == sorted(restarts), restarts
    assert leader_start_before <= restarts[0] and restarts[-1] <= leader_start_after, \
        (behind, leader_start_before, restarts, leader_start_after)
    laggard_start = restarts[-1]
    assert min(base_offsets(cluster.broker(laggard), topic)) >= laggard_start
    # Its epochs from there on are the leader's.
    leader_epochs = epoch_entries(cluster.broker(leader), topic)
    laggard_epochs = epoch_entries(cluster.broker(laggard), topic)
    compare_from = max([laggard_start] + [o for _, o in leader_epochs[:1]])
    assert laggard_epochs and epochs_from(laggard_epochs, compare_from) == epochs_from(leader_epochs, compare_from), \
        (laggard_start, laggard_epochs, leader_epochs)

    for node_id in [leader] + [n for n in cluster.brokers if n not in (leader, laggard)]:
        cluster.broker(node_id).kill()
    wait_until(lambda: partition_state(cluster, topic, 0, node_id=laggard).leader == laggard, 30,
               f"broker {laggard} to lead {topic}-0")
    acked = len(writer.acked)
    wait_until(lambda: len(writer.acked) >= acked + 200, 120, "writes through the caught-up follower")
    writer.stop()
    assert not writer.failed, writer.failed[:5]

    got = consume_confluent(cluster.broker(laggard).bootstrap, topic, len(writer.acked), partition=0)
    values = [r.value for r in got]
    assert len(values) == len(set(values)), "duplicates in the log"
    by_offset = {r.offset: r.value for r in got}
    lost = [(o, v) for o, v in writer.acked if by_offset.get(o) != v]
    assert not lost, f"{len(lost)} acknowledged records lost or moved, first: {lost[:5]}"
    seqs = [int(v.decode().split("-")[1]) for v in values]
    assert seqs == sorted(seqs), "one producer's records out of order"

    for b in cluster.brokers.values():
        if not b.running():
            b.spawn()
    cluster.wait_for_members()
    wait_for_full_isr(cluster, topic, 1, timeout_s=120)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)
