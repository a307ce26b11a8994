"""Replication under faults, in the spirit of Jepsen: nothing acknowledged is lost, nothing is
duplicated or reordered, and the replicas end byte-identical.

Three brokers and etcd on loopback, each broker behind a cutting proxy (`cut_proxy.py`), the
last one with its log dir on a loop-mounted ext4 that can be filled; a topic of PARTITIONS
partitions with replication factor REPLICATION_FACTOR and min.insync.replicas 2 (1 without
replicas); three idempotent acks=all producers (`faults.Workload`) while faults chosen at random
(`faults.Faults`: SIGKILL of a leader, a follower, the controller; SIGSTOP/SIGCONT; a cut from
clients and peers; a cut from etcd too; a full disk; a clean restart, SIGTERM being Kafka's
controlled shutdown) hit the cluster one after the other. Then
`fault_checker.check` reads everything back and looks at every replica's files.

The default run (and CI) is the short schedule (>= 30 faults); STRATA_FAULTS=long runs >= 300.
STRATA_FAULTS_SEED replays a schedule (the seed is printed; run with -s to see the faults);
STRATA_FAULTS_COUNT changes the number of faults; STRATA_FAULTS_KEEP=<dir> copies the topic's
partition dirs, checkpoints and the brokers' output there when the checker finds something.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from pathlib import Path

import pytest

from fault_checker import check, keep_evidence
from faults import DISK_FULL, DiskUnavailable, FaultCluster, Faults, LoopDisk, Workload, kinds_for

# The one constant the suite's shape depends on (1 ran the suite before replication).
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = min(2, REPLICATION_FACTOR)
PARTITIONS = 6
PRODUCERS = 3
TOPIC = "faults"
SCHEDULES = {
    # faults, overall deadline for the faults (s), records/s per producer
    "short": (30, 240, 300),
    "long": (300, 3600, 200),
}


@pytest.fixture
def loop_disk(tmp_path):
    """A loop-mounted ext4 for one broker's log dir (root and loop devices needed), or the reason
    it cannot be had; unmounted after the brokers are gone."""
    disk = LoopDisk(tmp_path / "disk.img", tmp_path / "disk")
    try:
        disk.mount()
    except DiskUnavailable as e:
        yield str(e)
        disk.unmount()
        return
    yield disk
    disk.unmount()


@pytest.fixture
def fault_cluster(loop_disk, etcd, broker_factory, request):
    disk = loop_disk if isinstance(loop_disk, LoopDisk) else None
    if disk is None:
        print(f"\ndisk_full left out: {loop_disk}")

    def make(settings, log_dir):
        return broker_factory(settings, log_dir=log_dir, keep_port=True)

    prefix = f"/strata-test/faults-{uuid.uuid4().hex[:8]}"
    fc = FaultCluster(make, etcd.endpoint, prefix, count=3, disk=disk)
    try:
        yield fc.start()
    finally:
        fc.close()
        for node in fc.nodes.values():  # before the disk's unmount
            if node.broker.running():
                node.broker.kill()


def test_acknowledged_records_survive_random_faults(fault_cluster, strata_bin, java):
    schedule = os.environ.get("STRATA_FAULTS", "short")
    count, budget_s, rate = SCHEDULES[schedule]
    count = int(os.environ.get("STRATA_FAULTS_COUNT", count))
    seed = int(os.environ.get("STRATA_FAULTS_SEED", random.randrange(1 << 32)))
    disk = any(n.disk is not None for n in fault_cluster.nodes.values())
    kinds = kinds_for(REPLICATION_FACTOR, disk)
    print(f"\nfaults: schedule={schedule} seed={seed} rf={REPLICATION_FACTOR} kinds={','.join(kinds)}"
          f"{'' if disk else f' (no {DISK_FULL})'}")

    fault_cluster.create_topic(TOPIC, PARTITIONS, REPLICATION_FACTOR, MIN_INSYNC_REPLICAS)
    workload = Workload(fault_cluster.bootstrap, TOPIC, PARTITIONS, PRODUCERS, rate).start()
    time.sleep(1.0)  # every producer connected and acknowledged before the first fault
    faults = Faults(fault_cluster, TOPIC, PARTITIONS, kinds, seed).run(count, time.monotonic() + budget_s)

    report = check(fault_cluster, workload, faults, TOPIC, PARTITIONS, REPLICATION_FACTOR, strata_bin, java)
    print(report.summary())
    for line in report.problems:
        print(f"  {line}")
    found = (report.lost or report.misplaced or report.duplicates or report.order_violations
             or report.replica_mismatches or not report.isr_full or report.verify_failures
             or report.kafka_reader_mismatches or report.unclean_exits or faults.anomalies)
    if found and (keep := os.environ.get("STRATA_FAULTS_KEEP")):
        print(f"evidence kept in {keep_evidence(fault_cluster, TOPIC, Path(keep) / f'seed-{seed}')}")

    assert sum(faults.by_kind().values()) >= count, f"only {sum(faults.by_kind().values())} of {count} faults in {budget_s}s"
    assert report.acknowledged > 0
    assert report.lost == 0 and report.misplaced == 0, report.problems
    assert report.duplicates == 0, report.problems
    assert report.order_violations == 0, report.problems
    assert report.isr_full and report.replica_mismatches == 0, report.problems
    assert report.verify_failures == 0 and report.kafka_reader_mismatches == 0, report.problems
    assert not report.unclean_exits, report.problems
    assert not faults.anomalies, faults.anomalies
    assert report.unhealed == 0, f"{report.unhealed} faults not healed within the bound (seed {seed})"
