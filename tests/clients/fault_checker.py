"""The replication fault suite's checker: after the faults, is every acknowledged record there,
exactly once, in order, and are the replicas byte-identical?

`check()` heals everything, stops the workload (each producer flushes), waits (bounded) until
each partition's ISR is full again, reads every partition from offset 0 to its high watermark with a consumer, then stops
the brokers cleanly and looks at their files:

- lost: acknowledged values that no partition holds; misplaced: acknowledged values found, but
  not at the (partition, offset) the acknowledgement named;
- duplicates: values held more than once (idempotence must prevent every one);
- order violations: within a partition, one producer incarnation's sequence numbers going down;
- replica identity: for every partition, each replica's batches with last offset below the high
  watermark (the leader's `replication-offset-checkpoint` when it has one, else the consumer's)
  byte-for-byte equal to the leader's, across segment boundaries (replicas roll on their own);
- `strata log verify` on every broker's log dir (exit 0);
- Kafka's own reader (`ReadSegments.java`: `FileRecords`, `ensureValid` on every batch) on the
  leader's segments of each partition: the records below the high watermark hash to what the
  consumer read.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from faults import FaultCluster, FaultLog, Workload, stop_or_kill

ISR_TIMEOUT_S = 90.0
CONSUME_TIMEOUT_S = 180.0
CHECKPOINT = "replication-offset-checkpoint"


@dataclass
class Report:
    seed: int
    replication_factor: int
    faults: Counter
    skipped: Counter
    unhealed: int
    isr_full: bool
    acknowledged: int = 0
    failed: int = 0
    unresolved: int = 0
    fatal: int = 0
    consumed: int = 0
    lost: int = 0
    misplaced: int = 0
    # Acknowledged without an offset: librdkafka reports a success with offset -1 when the broker
    # answers a retried batch as a duplicate without its original offset (Kafka returns that
    # offset from the producer state's batch cache). Not lost if the value is in that partition.
    acked_without_offset: int = 0
    duplicates: int = 0
    order_violations: int = 0
    replicas_compared: int = 0
    replica_mismatches: int = 0
    verified_dirs: int = 0
    verify_failures: int = 0
    kafka_reader_partitions: int = 0
    kafka_reader_mismatches: int = 0
    unclean_exits: dict[int, int | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        if len(self.problems) < 50:
            self.problems.append(text)

    def summary(self) -> str:
        kinds = " ".join(f"{k}={n}" for k, n in sorted(self.faults.items()))
        return (f"faults: seed={self.seed} rf={self.replication_factor} injected={sum(self.faults.values())} "
                f"({kinds}) unhealed={self.unhealed} isr_full={self.isr_full} "
                f"acknowledged={self.acknowledged} failed={self.failed} unresolved={self.unresolved} "
                f"consumed={self.consumed} lost={self.lost} misplaced={self.misplaced} "
                f"acked_without_offset={self.acked_without_offset} "
                f"duplicates={self.duplicates} order_violations={self.order_violations} "
                f"replicas_compared={self.replicas_compared} replica_mismatches={self.replica_mismatches} "
                f"log_verify={self.verified_dirs - self.verify_failures}/{self.verified_dirs} "
                f"kafka_reader={self.kafka_reader_partitions - self.kafka_reader_mismatches}"
                f"/{self.kafka_reader_partitions}")


# --- reading back ---------------------------------------------------------------------------

def read_back(bootstrap: str, topic: str, partitions: int) -> tuple[dict[int, list[tuple[int, bytes]]], dict[int, int]]:
    """Every record of every partition from offset 0 to its high watermark, and the watermarks."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"faults-check-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": False,
                         "isolation.level": "read_uncommitted", "fetch.max.bytes": 52_428_800})
    try:
        hws = {}
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            assert low == 0, f"partition {p} starts at {low}: nothing may be deleted"
            hws[p] = high
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        done = lambda: all((out[p][-1][0] + 1 if out[p] else 0) >= hws[p] for p in out)  # noqa: E731
        while not done():
            if time.monotonic() > deadline:
                got = {p: len(v) for p, v in out.items()}
                raise AssertionError(f"read {got} records per partition, high watermarks {hws}")
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                if msg.offset() < hws[msg.partition()]:
                    out[msg.partition()].append((msg.offset(), msg.value()))
        return out, hws
    finally:
        consumer.close()


def analyze(report: Report, workload: Workload, got: dict[int, list[tuple[int, bytes]]]) -> None:
    where: dict[str, list[tuple[int, int]]] = {}
    for p, records in got.items():
        last_seq: dict[str, int] = {}
        for offset, raw in records:
            value = raw.decode()
            where.setdefault(value, []).append((p, offset))
            producer, _, seq = value.rpartition(":")
            n = int(seq)
            if producer in last_seq and n <= last_seq[producer]:
                report.order_violations += 1
                report.problem(f"order: p{p}@{offset} {value} after seq {last_seq[producer]}")
            last_seq[producer] = max(n, last_seq.get(producer, n))
    report.consumed = sum(len(r) for r in got.values())
    for value, places in where.items():
        if len(places) > 1:
            report.duplicates += len(places) - 1
            report.problem(f"duplicate: {value} at {places}")
    for log in workload.logs:
        report.acknowledged += len(log.acked)
        report.failed += len(log.failed)
        report.unresolved += log.unresolved
        report.fatal += len(log.fatal)
        for value, ack in log.acked.items():
            places = where.get(value)
            if not places:
                report.lost += 1
                report.problem(f"lost: {value} acknowledged at p{ack.partition}@{ack.offset}")
            elif ack.offset is None and any(p == ack.partition for p, _ in places):
                report.acked_without_offset += 1
                report.problem(f"acknowledged without an offset: {value} (p{ack.partition}), found at {places}")
            elif (ack.partition, ack.offset) not in places:
                report.misplaced += 1
                report.problem(f"misplaced: {value} acknowledged at p{ack.partition}@{ack.offset}, found at {places}")


# --- the replicas' files ------------------------------------------------------------------------

def checkpointed_hw(log_dir: Path, topic: str, partition: int) -> int | None:
    """The partition's high watermark in the log dir's replication-offset-checkpoint
    (version line, count line, then `topic partition offset` lines), if the file has it."""
    try:
        lines = (log_dir / CHECKPOINT).read_text().splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and int(parts[1]) == partition:
            return int(parts[2])
    return None


def batches_below(partition_dir: Path, hw: int) -> list[tuple[int, int, bytes]]:
    """(base offset, last offset, bytes) of every complete batch with last offset < hw, segments in
    base-offset order. Batch header: base offset i64, length i32 (bytes after this field),
    partition leader epoch i32, magic i8, crc u32, attributes i16, last offset delta i32."""
    out = []
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        pos = 0
        while pos + 27 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            end = pos + 12 + length
            if length < 15 or end > len(data):
                break  # a torn tail; recovery truncates it
            last = base + struct.unpack_from(">i", data, pos + 23)[0]
            if last < hw:
                out.append((base, last, data[pos:end]))
            pos = end
    return out


def compare_replicas(report: Report, log_dirs: dict[int, Path], topic: str, replicas: dict[int, list[int]],
                     leaders: dict[int, int], consumer_hws: dict[int, int]) -> dict[int, int]:
    """Compares every replica (broker id → its log dir in `log_dirs`) of every partition with the
    leader's; returns the high watermark used per partition."""
    used = {}
    for p, nodes in replicas.items():
        leader = leaders[p]
        leader_dir = log_dirs[leader]
        hw = checkpointed_hw(leader_dir, topic, p)
        if hw is None:
            hw = consumer_hws[p]
        elif hw != consumer_hws[p]:
            report.problem(f"p{p}: leader {leader} checkpointed HW {hw}, consumer saw {consumer_hws[p]}")
        used[p] = hw
        reference = batches_below(leader_dir / f"{topic}-{p}", hw)
        reached = reference[-1][1] + 1 if reference else 0
        if reached != hw:
            report.replica_mismatches += 1
            report.problem(f"p{p}: leader {leader}'s batches end at {reached}, HW {hw}")
        for node in nodes:
            if node == leader:
                continue
            report.replicas_compared += 1
            theirs = batches_below(log_dirs[node] / f"{topic}-{p}", hw)
            if theirs != reference:
                report.replica_mismatches += 1
                report.problem(f"p{p}: replica {node} differs from leader {leader}: {_first_difference(reference, theirs)}")
    return used


def _first_difference(a: list[tuple[int, int, bytes]], b: list[tuple[int, int, bytes]]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"batch {i}: leader [{x[0]}..{x[1]}] {len(x[2])} B, replica [{y[0]}..{y[1]}] {len(y[2])} B"
    return f"leader has {len(a)} batches below the HW, replica {len(b)}"


def verify_log_dirs(report: Report, fc: FaultCluster, strata_bin: Path) -> None:
    for node in fc.nodes.values():
        report.verified_dirs += 1
        proc = subprocess.run([str(strata_bin), "log", "verify", str(node.broker.log_dir)],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            report.verify_failures += 1
            report.problem(f"strata log verify {node.broker.log_dir} exited {proc.returncode}: "
                           f"{(proc.stdout + proc.stderr)[-2000:]}")


def records_digest(records: list[tuple[int, bytes]]) -> str:
    """What ReadSegments.java hashes: per record its offset (i64) and value (i32 length, bytes)."""
    h = hashlib.sha256()
    for offset, value in records:
        h.update(struct.pack(">q", offset))
        if value is None:
            h.update(struct.pack(">i", -1))
        else:
            h.update(struct.pack(">i", len(value)) + value)
    return h.hexdigest()


def kafka_reader(report: Report, java, fc: FaultCluster, topic: str, leaders: dict[int, int],
                 hws: dict[int, int], got: dict[int, list[tuple[int, bytes]]]) -> None:
    args = []
    for p, leader in sorted(leaders.items()):
        args += [str(fc.nodes[leader].broker.log_dir / f"{topic}-{p}"), str(hws[p])]
    lines = java.run("ReadSegments", *args)
    by_dir = {line["dir"]: line for line in lines}
    for p, leader in sorted(leaders.items()):
        report.kafka_reader_partitions += 1
        line = by_dir.get(str(fc.nodes[leader].broker.log_dir / f"{topic}-{p}"))
        want = records_digest(got[p])
        if line is None or line["records"] != len(got[p]) or line["sha256"] != want:
            report.kafka_reader_mismatches += 1
            report.problem(f"p{p}: Kafka's reader on broker {leader} gave {line}, the consumer {len(got[p])} records")


# --- the whole check ------------------------------------------------------------------------------

def check(fc: FaultCluster, workload: Workload, faults: FaultLog, topic: str, partitions: int,
          replication_factor: int, strata_bin: Path, java=None, log=print) -> Report:
    report = Report(faults.seed, replication_factor, faults.by_kind(), faults.skipped, faults.unhealed, False)
    for anomaly in faults.anomalies:
        report.problem(anomaly)
    fc.heal_all()
    try:
        fc.wait_led(topic, partitions, ISR_TIMEOUT_S)
    except AssertionError as e:
        report.problem(str(e))
    # Producers stop first, so the ISR that is then full holds everything below the high
    # watermark the consumer sees (a replica that left the ISR during the flush could lag).
    workload.stop()
    try:
        took = fc.wait_led(topic, partitions, ISR_TIMEOUT_S, full_isr=True)
        report.isr_full = True
        log(f"checker: every ISR full {took:.1f}s after the producers stopped")
    except AssertionError as e:
        report.problem(str(e))
    got, consumer_hws = read_back(fc.bootstrap, topic, partitions)
    analyze(report, workload, got)

    _, md = fc.metadata(topic)
    parts = md.topics[topic].partitions
    replicas = {p: list(info.replicas) for p, info in parts.items()}
    leaders = {p: info.leader for p, info in parts.items()}
    for node in fc.nodes.values():
        code = stop_or_kill(node.broker)
        if code != 0:
            report.unclean_exits[node.node_id] = code
            report.problem(f"broker {node.node_id} did not exit cleanly on SIGTERM: {code}")

    log_dirs = {n: node.broker.log_dir for n, node in fc.nodes.items()}
    hws = compare_replicas(report, log_dirs, topic, replicas, leaders, consumer_hws)
    verify_log_dirs(report, fc, strata_bin)
    if java is not None:
        kafka_reader(report, java, fc, topic, leaders, hws, got)
    return report


def keep_evidence(fc: FaultCluster, topic: str, dest: Path) -> Path:
    """Copies what a finding is traced with to `dest` (pytest's temporary dirs are rotated, and the
    loop-mounted log dir goes with its unmount): each broker's partition dirs of `topic`, its log
    dir's checkpoints and its output."""
    for n, node in fc.nodes.items():
        target = dest / f"broker-{n}"
        target.mkdir(parents=True, exist_ok=True)
        log_dir = node.broker.log_dir
        for d in sorted(log_dir.glob(f"{topic}-*")):
            shutil.copytree(d, target / d.name, dirs_exist_ok=True)
        for f in log_dir.glob("*checkpoint*"):
            shutil.copy2(f, target / f.name)
        for f in node.broker.output_files:
            if f.exists():
                shutil.copy2(f, target / f.name)
    return dest

