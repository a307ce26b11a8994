"""Replication end to end: three brokers and a real etcd, topics with replication factor 3, driven
by the Java client, confluent-kafka (librdkafka) and kcat.

Guards issue 15's promises as clients see them: acks=all records round trip through every client
and every replica ends byte-identical to its leader (a valid Kafka log: `strata log verify`
passes); a SIGKILLed leader is replaced by an in-sync follower with a higher leader epoch while
an idempotent producer keeps writing, and no acknowledged record is lost or duplicated; the
restarted broker catches up and rejoins the ISR; with `min.insync.replicas=2` and one replica
left, acks=all is refused with NOT_ENOUGH_REPLICAS and nothing is appended; a leader that took
records no follower fetched (acks=1) and then died truncates them by leader epoch when it comes
back (KIP-101), ending byte-identical to the new leader.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from confluent_kafka import KafkaError, Producer

from cluster import StrataCluster, wait_until
from records import BASE_TIMESTAMP_MS, assert_records, consume_confluent, create_topic, make_records
from test_cluster import RACKS, java_consume_all, kcat_consume, kcat_produce, per_partition, produce, spread

PARTITIONS = 3
RF = 3
NOT_ENOUGH_REPLICAS = 19


# --- helpers ------------------------------------------------------------------------------

def new_cluster(cluster_factory, endpoints: str, **settings: str) -> StrataCluster:
    return cluster_factory(endpoints, racks=RACKS, overrides=settings or None)


def partition_state(cluster: StrataCluster, topic: str, p: int, node_id: int | None = None):
    return cluster.metadata(node_id, [topic]).topics[topic].partitions[p]


def wait_for_full_isr(cluster: StrataCluster, topic: str, partitions: int, timeout_s: float = 60) -> None:
    def full():
        parts = cluster.metadata(None, [topic]).topics[topic].partitions
        return len(parts) == partitions and all(
            info.leader >= 0 and sorted(info.isr) == sorted(info.replicas) and len(info.replicas) == RF
            for info in parts.values())

    wait_until(full, timeout_s, f"every partition of {topic} to have its {RF} replicas in sync")


def segment_bytes(log_dir: Path, topic: str, partition: int) -> bytes:
    """The partition's .log files concatenated in offset order."""
    d = log_dir / f"{topic}-{partition}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))


def assert_replicas_identical(cluster: StrataCluster, topic: str, partitions: int) -> None:
    """Once the ISR is full and nothing is written, every replica holds exactly the leader's
    bytes (the same batches, offsets, epochs and CRCs)."""
    def same():
        for p in range(partitions):
            copies = {node_id: segment_bytes(b.log_dir, topic, p) for node_id, b in cluster.brokers.items()}
            if len(set(copies.values())) != 1:
                return False
        return True

    try:
        wait_until(same, 30, f"the replicas of {topic} to be byte-identical")
    except AssertionError:
        sizes = {p: {n: len(segment_bytes(b.log_dir, topic, p)) for n, b in cluster.brokers.items()}
                 for p in range(partitions)}
        raise AssertionError(f"replicas differ; .log sizes per partition and broker: {sizes}") from None


def verify_data_dirs(strata_bin: Path, cluster: StrataCluster) -> None:
    for node_id, b in cluster.brokers.items():
        proc = subprocess.run([str(strata_bin), "log", "verify", str(b.log_dir)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"strata log verify failed on broker {node_id}:\n{proc.stdout}\n{proc.stderr}"


class IdempotentWriter:
    """An idempotent acks=all producer writing `writer-<n>` values to one partition in a thread,
    remembering every acknowledged (offset, value) and every failure."""

    def __init__(self, bootstrap: str, topic: str, partition: int):
        self.topic, self.partition = topic, partition
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 2, "message.timeout.ms": 120_000,
                                  "max.in.flight.requests.per.connection": 5})
        self.acked: list[tuple[int, bytes]] = []
        self.failed: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def on_delivery(self, err, msg) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append((msg.offset(), msg.value()))

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.producer.produce(self.topic, value=f"writer-{self.sent}".encode(), partition=self.partition,
                                      on_delivery=self.on_delivery)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.002)

    def start(self) -> "IdempotentWriter":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        remaining = self.producer.flush(150)
        assert remaining == 0, f"{remaining} records never acknowledged nor failed"


# --- tests --------------------------------------------------------------------------------

def test_acks_all_round_trips_and_replicas_match_byte_for_byte(etcd, cluster_factory, java, tmp_path, strata_bin):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic, count = "replicated", 1500
    create_topic(cluster.bootstrap, topic, PARTITIONS, config={"min.insync.replicas": "2"}, replication_factor=RF)
    wait_for_full_isr(cluster, topic, PARTITIONS)
    for p in range(PARTITIONS):
        info = partition_state(cluster, topic, p)
        assert sorted(info.replicas) == sorted(cluster.brokers), info
        # Racks spread: three brokers on three racks, so each replica on its own rack.
        assert info.leader == info.replicas[0], info

    targets = spread(count, list(range(PARTITIONS)))
    expected: dict[int, list] = {p: [] for p in range(PARTITIONS)}
    ck = make_records("ck", count)
    acks = produce(cluster.bootstrap, topic, ck, targets)
    assert acks == [(targets[i], i // PARTITIONS) for i in range(count)]
    for p, rs in per_partition(ck, targets).items():
        expected[p] += rs
    lines = java.run("ProducePartitions", cluster.bootstrap, topic, "jv", count, PARTITIONS, BASE_TIMESTAMP_MS)
    assert sum(1 for a in lines if a["event"] == "ack") == count
    for p, rs in per_partition(make_records("jv", count), targets).items():
        expected[p] += rs
    per = count // PARTITIONS
    for p in range(PARTITIONS):
        expected[p] += kcat_produce(cluster.bootstrap, topic, p, f"kc{p}", per, tmp_path)

    total = 3 * per
    for p in range(PARTITIONS):
        assert_records(consume_confluent(cluster.bootstrap, topic, total, partition=p), expected[p])
        assert_records(kcat_consume(cluster.bootstrap, topic, p), expected[p])
    by_java = java_consume_all(java, cluster.bootstrap, topic)
    for p in range(PARTITIONS):
        assert [(r.key, r.value) for r in by_java[p]] == [(r.key, r.value) for r in expected[p]]

    wait_for_full_isr(cluster, topic, PARTITIONS)
    assert_replicas_identical(cluster, topic, PARTITIONS)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)


def test_leader_sigkill_fails_over_without_losing_or_duplicating_acknowledged_records(etcd, cluster_factory,
                                                                                      strata_bin):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic = "failover"
    create_topic(cluster.bootstrap, topic, 1, config={"min.insync.replicas": "2"}, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    before = partition_state(cluster, topic, 0)
    writer = IdempotentWriter(cluster.bootstrap, topic, 0).start()
    wait_until(lambda: len(writer.acked) >= 500, 30, "500 acknowledged records before the kill")
    victim = before.leader
    cluster.broker(victim).kill()
    acked_at_kill = len(writer.acked)

    def new_leader():
        info = partition_state(cluster, topic, 0, node_id=next(iter(cluster.running())))
        return info if info.leader not in (-1, victim) else None

    after = wait_until(new_leader, 30, "a new leader from the ISR")
    assert after.leader_epoch > before.leader_epoch
    assert after.leader in before.isr
    wait_until(lambda: len(writer.acked) >= acked_at_kill + 500, 60, "500 more acknowledged records")
    cluster.broker(victim).spawn()
    cluster.wait_for_members()
    wait_until(lambda: len(writer.acked) >= acked_at_kill + 1000, 60, "writes while the old leader catches up")
    writer.stop()
    assert not writer.failed, writer.failed[:5]
    wait_for_full_isr(cluster, topic, 1)

    got = consume_confluent(cluster.bootstrap, topic, len(writer.acked), partition=0)
    values = [r.value for r in got]
    assert len(values) == len(set(values)), "duplicates in the log"
    by_offset = {r.offset: r.value for r in got}
    lost = [(o, v) for o, v in writer.acked if by_offset.get(o) != v]
    assert not lost, f"{len(lost)} acknowledged records lost or moved, first: {lost[:5]}"
    seqs = [int(v.decode().split("-")[1]) for v in values]
    assert seqs == sorted(seqs), "one producer's records out of order"
    assert_replicas_identical(cluster, topic, 1)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)


def test_acks_all_below_min_insync_replicas_is_refused_and_appends_nothing(etcd, cluster_factory):
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic = "min-isr"
    create_topic(cluster.bootstrap, topic, 1, config={"min.insync.replicas": "2"}, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    produce(cluster.bootstrap, topic, make_records("a", 10), [0] * 10)
    leader = partition_state(cluster, topic, 0).leader
    others = [n for n in cluster.brokers if n != leader]
    for n in others:
        cluster.broker(n).kill()
    wait_until(lambda: partition_state(cluster, topic, 0, node_id=leader).isr == [leader], 30,
               "the ISR to shrink to the leader")
    bootstrap = cluster.broker(leader).bootstrap
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 3000, "retries": 0})
    errors = []
    producer.produce(topic, value=b"refused", partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.NOT_ENOUGH_REPLICAS, errors
    got = consume_confluent(bootstrap, topic, 10, partition=0)
    assert [r.value for r in got] == [r.value for r in make_records("a", 10)]
    for n in others:
        cluster.broker(n).spawn()
    wait_for_full_isr(cluster, topic, 1)
    produce(cluster.bootstrap, topic, make_records("b", 10), [0] * 10)
    got = consume_confluent(cluster.bootstrap, topic, 20, partition=0)
    assert b"refused" not in [r.value for r in got]


def test_a_returning_leader_truncates_records_no_follower_took(etcd, cluster_factory, strata_bin):
    """KIP-101: the leader takes acks=1 records while both followers are paused, then dies; a
    follower leads the next epoch and takes new records at the same offsets; the old leader comes
    back, truncates its divergent tail by leader epoch and ends byte-identical to the new leader."""
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic = "diverge"
    create_topic(cluster.bootstrap, topic, 1, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    produce(cluster.bootstrap, topic, make_records("base", 20), [0] * 20)
    wait_for_full_isr(cluster, topic, 1)
    state = partition_state(cluster, topic, 0)
    old_leader = state.leader
    followers = [n for n in cluster.brokers if n != old_leader]
    # Pause the followers (well within the 3 s session), write to the leader alone, kill it.
    # A follower's Fetch parked at the leader would still carry new records into the paused
    # follower's socket buffer: let those answer empty first (replica.fetch.wait.max.ms 500).
    for n in followers:
        cluster.broker(n).process.send_signal(19)  # SIGSTOP
    try:
        time.sleep(0.8)
        producer = Producer({"bootstrap.servers": cluster.broker(old_leader).bootstrap, "acks": "1",
                             "linger.ms": 0})
        for i in range(5):
            producer.produce(topic, value=f"lost-{i}".encode(), partition=0)
        assert producer.flush(5) == 0
        cluster.broker(old_leader).kill()
    finally:
        for n in followers:
            cluster.broker(n).process.send_signal(18)  # SIGCONT

    def new_leader():
        info = partition_state(cluster, topic, 0, node_id=followers[0])
        return info if info.leader in followers else None

    after = wait_until(new_leader, 30, "a follower to lead")
    assert after.leader_epoch > state.leader_epoch
    produce(cluster.bootstrap, topic, make_records("next", 10), [0] * 10)
    cluster.broker(old_leader).spawn()
    cluster.wait_for_members()
    wait_for_full_isr(cluster, topic, 1)
    got = consume_confluent(cluster.bootstrap, topic, 30, partition=0)
    assert_records(got, make_records("base", 20) + make_records("next", 10))
    assert_replicas_identical(cluster, topic, 1)
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)


def test_sigterm_moves_leadership_before_the_broker_stops(etcd, cluster_factory):
    """Controlled shutdown: on SIGTERM the leader asks the controller to move its leaderships to
    in-sync followers and waits for that before it stops serving, so an idempotent acks=all
    producer sees the new leader and loses nothing."""
    cluster = new_cluster(cluster_factory, etcd.endpoint)
    topic = "controlled"
    create_topic(cluster.bootstrap, topic, 1, config={"min.insync.replicas": "2"}, replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    before = partition_state(cluster, topic, 0)
    victim = before.leader
    writer = IdempotentWriter(cluster.bootstrap, topic, 0).start()
    wait_until(lambda: len(writer.acked) >= 300, 30, "300 acknowledged records before the shutdown")
    assert cluster.broker(victim).stop() == 0
    after = partition_state(cluster, topic, 0, node_id=next(iter(cluster.running())))
    assert after.leader not in (-1, victim), after
    assert after.leader_epoch > before.leader_epoch
    assert victim not in after.isr, after
    acked = len(writer.acked)
    wait_until(lambda: len(writer.acked) >= acked + 300, 60, "300 more acknowledged records")
    writer.stop()
    assert not writer.failed, writer.failed[:5]
    out = cluster.broker(victim).output_tail()
    assert "controlled shutdown: this broker leads nothing" in out, out[-3000:]
    got = consume_confluent(cluster.bootstrap, topic, len(writer.acked), partition=0)
    by_offset = {r.offset: r.value for r in got}
    lost = [(o, v) for o, v in writer.acked if by_offset.get(o) != v]
    assert not lost, f"{len(lost)} acknowledged records lost, first: {lost[:5]}"
    values = [r.value for r in got]
    assert len(values) == len(set(values)), "duplicates in the log"
