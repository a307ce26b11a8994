"""Fetch from the closest replica (KIP-392): three brokers on racks r1, r2, r3 with
`replica.selector.class` set and a topic with replication factor 3.

Guards issue 15's promise that consumers in one rack read from a replica in that rack: a
confluent-kafka consumer whose `client.rack` is a follower's rack is pointed at that follower by
the leader and reads every record from it (librdkafka's statistics name the broker it fetches
from and count the Fetch requests each broker got), and records produced later reach it promptly
(the follower wakes parked consumer fetches when its high watermark rises, KAFKA-14334); a
consumer without a rack reads from the leader; a follower refuses a consumer Fetch older than v11
with NOT_LEADER_OR_FOLLOWER (KAFKA-9004) and serves v11; an unknown selector class stops the
broker at startup.
"""

from __future__ import annotations

import json
import struct
import subprocess
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from broker import free_port
from cluster import StrataCluster, _call, _one_partition, _string, wait_until
from records import Record, assert_records, create_topic, make_records
from test_cluster import RACKS, produce
from test_replication import partition_state, wait_for_full_isr

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NOT_LEADER_OR_FOLLOWER = 6
RF = 3
# The records' CreateTime is in 2024: without this, retention deletes them under a slow test.
KEEP = {"retention.ms": "-1"}


def new_cluster(cluster_factory, endpoints: str) -> StrataCluster:
    return cluster_factory(endpoints, racks=RACKS, overrides={"replica.selector.class": RACK_AWARE})


def rack_of(cluster: StrataCluster, node_id: int) -> str:
    rack = cluster.metadata().brokers[node_id].rack
    assert rack, f"broker {node_id} has no rack"
    return rack


# --- a consumer that reports where it fetched from -----------------------------------------

class WatchedConsumer:
    """A confluent-kafka consumer assigned one partition, with librdkafka's statistics every
    200 ms: which broker it fetches the partition from and how many Fetch requests each broker
    got."""

    def __init__(self, bootstrap: str, topic: str, partition: int, **conf):
        self.topic, self.partition = topic, partition
        self.stats: dict | None = None
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"ffr-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "statistics.interval.ms": 200,
            "stats_cb": self._on_stats,
            **conf,
        })
        self.consumer.assign([TopicPartition(topic, partition, 0)])

    def _on_stats(self, raw: str) -> None:
        self.stats = json.loads(raw)

    def read(self, count: int, timeout_s: float = 60) -> list:
        out = []
        deadline = time.monotonic() + timeout_s
        while len(out) < count and time.monotonic() < deadline:
            msg = self.consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            out.append(msg)
        assert len(out) == count, f"read {len(out)} of {count} records in {timeout_s}s"
        return out

    def fresh_stats(self) -> dict:
        """Statistics emitted after this call (so they cover everything read before it)."""
        self.stats = None
        return wait_until(lambda: (self.consumer.poll(0.1), self.stats)[1], 10, "librdkafka statistics")

    def fetching_from(self) -> int:
        """The broker id librdkafka fetches the partition from now."""
        part = self.fresh_stats()["topics"][self.topic]["partitions"][str(self.partition)]
        return part["broker"]

    def fetch_requests(self) -> dict[int, int]:
        """Fetch requests sent so far, per broker id."""
        brokers = self.fresh_stats()["brokers"].values()
        return {b["nodeid"]: b["req"].get("Fetch", 0) for b in brokers if b["nodeid"] >= 0}

    def close(self) -> None:
        self.consumer.close()


def as_records(msgs: list) -> list[Record]:
    return [Record(m.key(), m.value(), list(m.headers() or []), m.timestamp()[1], m.offset()) for m in msgs]


# --- Fetch v10 / v11 over a raw socket ------------------------------------------------------

@dataclass
class FetchAnswer:
    error: int
    high_watermark: int
    preferred_read_replica: int
    records_len: int


def raw_fetch(bootstrap: str, topic: str, partition: int, version: int, rack: str = "",
              timeout_s: float = 10.0) -> FetchAnswer:
    """A consumer's Fetch (replica id -1) v10 or v11 from offset 0, min_bytes 0 (answer at once);
    v11 sends `rack` as the client's rack."""
    assert version in (10, 11)
    body = struct.pack(">iiiib", -1, 0, 0, 1 << 20, 0) + struct.pack(">ii", 0, -1)  # session id, epoch
    body += _one_partition(topic, struct.pack(">iiqqi", partition, -1, 0, -1, 1 << 20))
    body += struct.pack(">i", 0)  # forgotten topics
    if version >= 11:
        body += _string(rack)
    r = _call(bootstrap, 1, version, body, timeout_s)
    r.take("i")  # throttle_time_ms
    assert r.take("h") == 0  # top-level error
    r.take("i")  # session id
    assert r.take("i") == 1 and r.string() == topic and r.take("i") == 1
    assert r.take("i") == partition
    error, hw = r.take("h"), r.take("q")
    r.take("q")  # last stable offset
    r.take("q")  # log start offset
    for _ in range(max(r.take("i"), 0)):  # aborted transactions
        r.take("q")
        r.take("q")
    preferred = r.take("i") if version >= 11 else -1
    return FetchAnswer(error, hw, preferred, max(r.take("i"), 0))


# --- tests --------------------------------------------------------------------------------

def test_a_consumer_in_a_followers_rack_reads_from_that_follower(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic, count = "near", 600
    create_topic(cluster.bootstrap, topic, 1, config=KEEP, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    records = make_records("near", count)
    produce(cluster.bootstrap, topic, records, [0] * count)
    state = partition_state(cluster, topic, 0)
    leader = state.leader
    follower = next(n for n in state.replicas if n != leader)
    rack = rack_of(cluster, follower)
    assert rack != rack_of(cluster, leader)

    consumer = WatchedConsumer(cluster.bootstrap, topic, 0, **{"client.rack": rack, "fetch.wait.max.ms": 15000})
    try:
        assert_records(as_records(consumer.read(count)), records)
        assert consumer.fetching_from() == follower
        before = consumer.fetch_requests()
        # The leader answered the first Fetch with the follower's id; the follower served the rest.
        assert before.get(follower, 0) >= 1, before

        # New records reach the consumer parked at the follower as soon as the follower's high
        # watermark covers them, not when its 15 s fetch.wait.max.ms runs out.
        more = make_records("later", 5)
        for i, r in enumerate(more):
            produce(cluster.bootstrap, topic, [r], [0])
            started = time.monotonic()
            [msg] = consumer.read(1, timeout_s=30)
            took = time.monotonic() - started
            assert msg.offset() == count + i and msg.value() == r.value
            assert took < 6, f"record {i} took {took:.1f}s to reach the consumer at the follower"
        after = consumer.fetch_requests()
        assert after[follower] > before[follower], (before, after)
        assert after.get(leader, 0) == before.get(leader, 0), ("fetched from the leader again", before, after)
        assert consumer.fetching_from() == follower
    finally:
        consumer.close()


def test_a_consumer_without_a_rack_or_in_the_leaders_rack_reads_from_the_leader(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic, count = "far", 200
    create_topic(cluster.bootstrap, topic, 1, config=KEEP, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    records = make_records("far", count)
    produce(cluster.bootstrap, topic, records, [0] * count)
    leader = partition_state(cluster, topic, 0).leader
    for conf in ({}, {"client.rack": rack_of(cluster, leader)}, {"client.rack": "elsewhere"}):
        consumer = WatchedConsumer(cluster.bootstrap, topic, 0, **conf)
        try:
            assert_records(as_records(consumer.read(count)), records)
            assert consumer.fetching_from() == leader, conf
            fetches = consumer.fetch_requests()
            assert fetches.get(leader, 0) >= 1, (conf, fetches)
            assert all(n == 0 for b, n in fetches.items() if b != leader), (conf, fetches)
        finally:
            consumer.close()


def test_followers_serve_consumer_fetch_v11_only_and_only_leaders_pick(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic = "raw"
    create_topic(cluster.bootstrap, topic, 1, config=KEEP, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    produce(cluster.bootstrap, topic, make_records("raw", 10), [0] * 10)
    state = partition_state(cluster, topic, 0)
    leader = state.leader
    follower = next(n for n in state.replicas if n != leader)
    at_follower = cluster.broker(follower).bootstrap
    at_leader = cluster.broker(leader).bootstrap

    # KAFKA-9004: no client metadata (< v11) → only the leader serves.
    assert raw_fetch(at_follower, topic, 0, 10).error == NOT_LEADER_OR_FOLLOWER
    assert raw_fetch(at_leader, topic, 0, 10).error == 0

    # v11: the follower serves from its own log up to its own high watermark, and never points
    # elsewhere, whatever the rack.
    def follower_caught_up():
        a = raw_fetch(at_follower, topic, 0, 11, rack=rack_of(cluster, leader))
        return a if a.error == 0 and a.high_watermark == 10 else None

    a = wait_until(follower_caught_up, 30, "the follower to serve v11 up to high watermark 10")
    assert a.preferred_read_replica == -1 and a.records_len > 0, a

    # The leader points a consumer in the follower's rack at the follower, with no records and
    # its own high watermark; a consumer without a rack gets the records from the leader.
    a = raw_fetch(at_leader, topic, 0, 11, rack=rack_of(cluster, follower))
    assert (a.error, a.preferred_read_replica, a.records_len, a.high_watermark) == (0, follower, 0, 10), a
    a = raw_fetch(at_leader, topic, 0, 11, rack="")
    assert (a.error, a.preferred_read_replica) == (0, -1) and a.records_len > 0, a


def test_an_unknown_replica_selector_class_stops_the_broker(strata_bin, tmp_path):
    proc = subprocess.run(
        [str(strata_bin), "serve",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
         "--override", f"log.dirs={tmp_path / 'data'}",
         "--override", "replica.selector.class=com.example.NearestReplicaSelector"],
        capture_output=True, text=True, timeout=30,
    )
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "com.example.NearestReplicaSelector" in output and "replica.selector.class" in output, output
