"""Transactions across brokers: three brokers and a real etcd, a transactional librdkafka
producer writing to partitions led by different brokers, and the transaction coordinator on
the leader of the transactional id's `__transaction_state` partition.

Guards issue 16's cluster promises: markers reach every partition leader (WriteTxnMarkers between
brokers), so `read_committed` consumers see committed transactions and never aborted ones on
every partition; when the coordinator's broker is SIGKILLed with a transaction open, the
`__transaction_state` partition's new leader loads the state, the producer's replacement with the
same transactional id fences the old epoch (the open transaction is aborted on every partition)
and commits new transactions through the new coordinator.
"""

from __future__ import annotations

from confluent_kafka import Producer

from cluster import StrataCluster, find_coordinator, wait_until
from records import consume_confluent, create_topic
from test_replication import RACKS, wait_for_full_isr

PARTITIONS = 3
RF = 3
TXN_SETTINGS = {
    # Few partitions: the topic is created (and replicated) on the first FindCoordinator.
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
}


def txn_producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                  "transaction.timeout.ms": 60000, "message.timeout.ms": 60000})
    p.init_transactions(60)
    return p


def send_txn(p: Producer, topic: str, prefix: str, per_partition: int, commit: bool) -> None:
    p.begin_transaction()
    for part in range(PARTITIONS):
        for i in range(per_partition):
            p.produce(topic, key=f"{prefix}-{part}-{i}".encode(), value=prefix.encode(), partition=part)
    p.flush(30)
    if commit:
        p.commit_transaction(60)
    else:
        p.abort_transaction(60)


def values(bootstrap: str, topic: str, partition: int, count: int, isolation: str) -> list[str]:
    got = consume_confluent(bootstrap, topic, count, partition=partition,
                            extra={"isolation.level": isolation}, timeout_s=20, to_end=True)
    return [r.key.decode() for r in got]


def coordinator_of(cluster: StrataCluster, txn_id: str) -> int:
    def answer():
        c = find_coordinator(cluster.any_running().bootstrap, txn_id, key_type=1)
        return c.node_id if c.error == 0 and c.node_id >= 0 else None
    return wait_until(answer, 60, f"a coordinator for {txn_id}")


def test_transactions_commit_and_abort_across_leaders_and_survive_a_coordinator_kill(etcd, cluster_factory):
    cluster = cluster_factory(etcd.endpoint, racks=RACKS, overrides=TXN_SETTINGS)
    topic = "txn-cluster"
    create_topic(cluster.bootstrap, topic, PARTITIONS, replication_factor=RF,
                 config={"min.insync.replicas": "2"})
    wait_for_full_isr(cluster, topic, PARTITIONS)
    leaders = {cluster.metadata(None, [topic]).topics[topic].partitions[p].leader for p in range(PARTITIONS)}
    assert len(leaders) == PARTITIONS, f"partitions should be led by different brokers: {leaders}"

    txn_id = "cluster-txn"
    p = txn_producer(cluster.bootstrap, txn_id)
    send_txn(p, topic, "c1", 5, commit=True)
    send_txn(p, topic, "a1", 5, commit=False)
    send_txn(p, topic, "c2", 5, commit=True)

    # Open a transaction, then SIGKILL the coordinator's broker before it ends.
    p.begin_transaction()
    for part in range(PARTITIONS):
        for i in range(3):
            p.produce(topic, key=f"open-{part}-{i}".encode(), value=b"open", partition=part)
    p.flush(30)
    coordinator = coordinator_of(cluster, txn_id)
    cluster.broker(coordinator).kill()
    wait_until(lambda: coordinator_of(cluster, txn_id) != coordinator, 60,
               "the transaction coordinator to move to another broker")

    # The replacement producer fences the old epoch: the open transaction is aborted.
    p2 = txn_producer(cluster.any_running().bootstrap, txn_id)
    send_txn(p2, topic, "c3", 4, commit=True)

    cluster.broker(coordinator).start()
    wait_for_full_isr(cluster, topic, PARTITIONS, timeout_s=90)

    expected_all = {part: [f"{pre}-{part}-{i}" for pre, n in (("c1", 5), ("a1", 5), ("c2", 5), ("open", 3), ("c3", 4))
                           for i in range(n)] for part in range(PARTITIONS)}
    expected_committed = {part: [k for k in keys if not k.startswith(("a1-", "open-"))]
                          for part, keys in expected_all.items()}
    for part in range(PARTITIONS):
        assert values(cluster.bootstrap, topic, part, len(expected_all[part]), "read_uncommitted") == \
            expected_all[part]
        got = values(cluster.bootstrap, topic, part, len(expected_all[part]), "read_committed")
        assert got == expected_committed[part], f"partition {part}"
