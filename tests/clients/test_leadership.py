"""Leadership admin against a replicated cluster (etcd + 3 or 4 brokers, replication factor 3),
driven by the Java Admin client and confluent-kafka.

Guards issue 15's ElectLeaders, preferred-leader balancing and reassignment promises: after the
preferred leader of a partition dies and comes back, electLeaders(PREFERRED) moves leadership
back to it (the other partitions answer ELECTION_NOT_NEEDED, an election over all partitions
omits them); with a short `leader.imbalance.check.interval.seconds` the controller does it by
itself; alterPartitionReassignments moves a partition from brokers {1,2,3} to {2,3,4} while an
idempotent producer keeps writing: listPartitionReassignments shows the move while the new
replica catches up, every record produced before and during the move is readable afterwards,
the replicas end byte-identical and broker 1's copy is deleted.
"""

from __future__ import annotations

import signal

from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from cluster import StrataCluster, wait_until
from records import assert_records, consume_confluent, create_topic, make_records
from test_cluster import produce
from test_replication import IdempotentWriter, partition_state, segment_bytes, verify_data_dirs, wait_for_full_isr

RF = 3


def preferred_leaders_lead(cluster: StrataCluster, topic: str, partitions: int) -> bool:
    parts = cluster.metadata(None, [topic]).topics[topic].partitions
    return len(parts) == partitions and all(i.leader == i.replicas[0] for i in parts.values())


def move_leadership_away(cluster: StrataCluster, topic: str, partition: int) -> int:
    """Kill the preferred leader of `partition`, wait for another leader, restart it and wait
    until it is back in the ISR; returns its id."""
    preferred = partition_state(cluster, topic, partition).replicas[0]
    cluster.broker(preferred).kill()
    survivor = next(n for n in cluster.brokers if n != preferred)
    wait_until(lambda: partition_state(cluster, topic, partition, node_id=survivor).leader not in (-1, preferred),
               30, "a leader other than the killed preferred one")
    cluster.broker(preferred).spawn()
    cluster.wait_for_members()
    return preferred


def test_elect_leaders_preferred_brings_leadership_back(etcd, cluster_factory, java):
    cluster = cluster_factory(etcd.endpoint, overrides={"auto.leader.rebalance.enable": "false"})
    topic, partitions = "elect", 3
    create_topic(cluster.bootstrap, topic, partitions, replication_factor=RF)
    wait_for_full_isr(cluster, topic, partitions)
    assert preferred_leaders_lead(cluster, topic, partitions)
    produce(cluster.bootstrap, topic, make_records("a", 30), [0] * 30)

    preferred = move_leadership_away(cluster, topic, 0)
    wait_for_full_isr(cluster, topic, partitions)
    before = partition_state(cluster, topic, 0)
    assert before.leader != preferred, "no balancing was enabled, leadership must stay away"

    results = {r["partition"]: r["error"] for r in java.run("LeadershipOps", "elect", cluster.bootstrap, topic,
                                                            partitions) if r["event"] == "elected"}
    assert results == {0: None, 1: "ElectionNotNeededException", 2: "ElectionNotNeededException"}, results
    after = partition_state(cluster, topic, 0)
    assert after.leader == preferred and after.leader_epoch > before.leader_epoch, (before, after)
    assert preferred_leaders_lead(cluster, topic, partitions)

    everything = java.run("LeadershipOps", "electAll", cluster.bootstrap)
    assert everything == [{"event": "electedAll", "count": 0}], "a null partition list omits fine partitions"

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    outcome = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 1), TopicPartition(topic, 9)]) \
        .result(30)
    codes = {tp.partition: (e.code() if e is not None else None) for tp, e in outcome.items()}
    assert codes == {1: KafkaError.ELECTION_NOT_NEEDED, 9: KafkaError.UNKNOWN_TOPIC_OR_PART}, codes

    # The records written before the move are all there, read from the restored leader.
    produce(cluster.bootstrap, topic, make_records("b", 30), [0] * 30)
    assert_records(consume_confluent(cluster.bootstrap, topic, 60, partition=0),
                   make_records("a", 30) + make_records("b", 30))


def test_auto_leader_rebalance_restores_preferred_leaders(etcd, cluster_factory):
    cluster = cluster_factory(etcd.endpoint, overrides={"leader.imbalance.check.interval.seconds": "2",
                                                        "leader.imbalance.per.broker.percentage": "10"})
    topic, partitions = "balance", 3
    create_topic(cluster.bootstrap, topic, partitions, replication_factor=RF)
    wait_for_full_isr(cluster, topic, partitions)
    preferred = move_leadership_away(cluster, topic, 1)
    wait_until(lambda: preferred_leaders_lead(cluster, topic, partitions), 60,
               f"the controller to give partition 1 back to broker {preferred}")
    produce(cluster.bootstrap, topic, make_records("c", 20), [1] * 20)
    assert_records(consume_confluent(cluster.bootstrap, topic, 20, partition=1), make_records("c", 20))


def test_reassignment_moves_a_partition_to_a_new_broker(etcd, cluster_factory, java, strata_bin):
    cluster = cluster_factory(etcd.endpoint, overrides={"auto.leader.rebalance.enable": "false"})
    topic = "moving"
    # The records carry 2024 timestamps: without retention.ms=-1 the first retention pass (30 s
    # after start) deletes them on a slow run, and the read-back finds nothing.
    create_topic(cluster.bootstrap, topic, 1, config={"min.insync.replicas": "2", "retention.ms": "-1"},
                 replication_factor=RF)
    wait_for_full_isr(cluster, topic, 1)
    start = partition_state(cluster, topic, 0)
    assert sorted(start.replicas) == [1, 2, 3]
    # Broker 4 is paused below for as long as a JVM takes to start and run the admin call, which
    # on a loaded machine exceeds the tests' 3 s lease: its registration would lapse and the
    # controller rightly refuse it as a target. Its own long lease keeps it registered.
    newcomer = cluster_factory(etcd.endpoint, count=1, first_node_id=4,
                               overrides={"auto.leader.rebalance.enable": "false",
                                          "broker.session.timeout.ms": "120000"})
    old_copy = cluster.broker(1).log_dir / f"{topic}-0"
    assert old_copy.is_dir()

    before = make_records("before", 2000)
    produce(cluster.bootstrap, topic, before, [0] * len(before))
    writer = IdempotentWriter(cluster.bootstrap, topic, 0).start()
    wait_until(lambda: len(writer.acked) >= 200, 30, "writes before the move")

    # Broker 4 is paused while the reassignment is listed: a fast machine would otherwise finish
    # copying the partition to it before ListPartitionReassignments runs, and nothing is ongoing.
    # The admin client bootstraps from brokers 1-3 only: a paused broker still accepts connections
    # (the kernel does) but never answers, so an admin client that picked it would spend its
    # request timeout there and, on a slow machine, the call's whole 60 s.
    running = ",".join(cluster.broker(n).bootstrap for n in (1, 2, 3))
    newcomer.broker(4).process.send_signal(signal.SIGSTOP)
    try:
        lines = java.run("LeadershipOps", "reassignAndList", running, topic, 0, "2,3,4")
    finally:
        newcomer.broker(4).process.send_signal(signal.SIGCONT)
    assert lines[0] == {"event": "reassign", "partition": 0, "error": None}, lines
    ongoing = [line for line in lines if line["event"] == "ongoing"]
    assert ongoing == [{"event": "ongoing", "topic": topic, "partition": 0, "replicas": [2, 3, 4, 1],
                        "adding": [4], "removing": [1]}], lines

    def moved():
        info = partition_state(cluster, topic, 0, node_id=2)
        return info if info.replicas == [2, 3, 4] and sorted(info.isr) == [2, 3, 4] else None

    after = wait_until(moved, 60, "the reassignment to complete")
    assert after.leader in (2, 3, 4) and after.leader_epoch > start.leader_epoch
    listed = java.run("LeadershipOps", "list", cluster.bootstrap)
    assert listed == [{"event": "listed", "count": 0}], listed
    cancel = java.run("LeadershipOps", "reassign", cluster.bootstrap, topic, 0, "cancel")
    assert cancel == [{"event": "reassign", "partition": 0, "error": "NoReassignmentInProgressException"}]
    bad = java.run("LeadershipOps", "reassign", cluster.bootstrap, topic, 0, "2,2,4")
    assert bad == [{"event": "reassign", "partition": 0, "error": "InvalidReplicaAssignmentException"}]
    unknown = java.run("LeadershipOps", "reassign", cluster.bootstrap, topic, 0, "2,3,9")
    assert unknown == [{"event": "reassign", "partition": 0, "error": "InvalidReplicaAssignmentException"}]

    acked_at_move = len(writer.acked)
    # Well under the producer's 30 s request timeout: a produce parked on broker 1 when the move
    # took its replica away ends at once with NOT_LEADER_OR_FOLLOWER, it does not wait that out.
    wait_until(lambda: len(writer.acked) >= acked_at_move + 200, 20, "writes after the move")
    writer.stop()
    assert not writer.failed, writer.failed[:5]

    wait_until(lambda: not old_copy.exists(), 30, "broker 1 to delete its copy")
    total = len(before) + len(writer.acked)
    got = consume_confluent(cluster.bootstrap, topic, total, partition=0)
    assert_records(got[:len(before)], before)
    by_offset = {r.offset: r.value for r in got}
    values = [r.value for r in got]
    # librdkafka acknowledges a retried batch the new leader already holds without an offset.
    lost = [(o, v) for o, v in writer.acked if (by_offset.get(o) != v if o is not None else v not in values)]
    assert not lost, f"{len(lost)} acknowledged records lost, first: {lost[:5]}"
    assert len(values) == len(set(values)), "duplicates in the log"

    def identical():
        return len({segment_bytes(cluster.broker(n).log_dir, topic, 0) for n in (2, 3, 4)}) == 1

    wait_until(identical, 30, "replicas 2, 3, 4 byte-identical")
    for b in cluster.brokers.values():
        b.stop()
    verify_data_dirs(strata_bin, cluster)
