"""The remote tier (KIP-405) in cluster mode: three brokers, a real etcd and an S3-API store
(moto) that all brokers share, a tiered topic with replication factor 3, driven by librdkafka.

Guards issue 15's "only the leader copies to the remote tier": every sealed segment of the
partition is uploaded exactly once (one `.log` object per segment base offset in the bucket,
where a copy per replica would make three), the leader drops its copied segments locally
(local.retention.bytes), and after the leader is killed a consumer still reads every record from
offset 0 through the new leader, which then tiers on; `strata log verify` passes on every broker.
"""

from __future__ import annotations

import collections
import time

import boto3

from cluster import StrataCluster, wait_until
from records import assert_records, consume_confluent, create_topic, make_records
from test_replication import partition_state, verify_data_dirs, wait_for_full_isr
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

    # Wait for a few more task rounds (interval 200 ms) so a follower that copied would show.
    time.sleep(2)
    counts = uploaded_segments(moto, topic)
    assert len(counts) >= 5, f"small segments must roll and tier: {counts}"
    copied_twice = {base: n for base, n in counts.items() if n != 1}
    assert not copied_twice, f"segments uploaded more than once (by followers): {copied_twice}"

    # The leader dies; the new one (from the ISR) serves every record from offset 0.
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

    cluster.broker(before.leader).spawn()
    cluster.wait_for_members()
    wait_for_full_isr(cluster, topic, 1)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)

