"""Moving a replica between the log dirs of one broker (AlterReplicaLogDirs, KIP-113).

A broker with two log dirs; the Java Admin client moves a partition with
`alterReplicaLogDirs` and watches it with `describeReplicaLogDirs` while an idempotent acks=all
confluent-kafka producer keeps writing. Afterwards every acknowledged record is read exactly
once and in order, the partition lives only in the new dir, `strata log verify` accepts both
dirs and Kafka's own segment reader accepts the moved files. The admin errors are Kafka's
(LOG_DIR_NOT_FOUND, REPLICA_NOT_AVAILABLE). A broker killed with SIGKILL in the middle of a
(throttled) move restarts, finishes the move, and loses nothing acknowledged. In a cluster both
a follower's and the leader's replica move, and acks=all requests parked on the leader when its
log is swapped complete on the new log instead of waiting out their request timeout.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from broker import free_port
from fault_checker import records_digest
from cluster import wait_until
from records import consume_confluent, create_topic
from test_metrics import scrape, total, value

BROKER_ID = 1  # the broker's default node.id
TOPIC = "moving"


class Writer:
    """An idempotent acks=all producer writing `v-<n>` values in a thread, remembering every
    acknowledged (offset, value) and every failure."""

    def __init__(self, bootstrap: str, topic: str, pad: int = 0, per_second: int = 0):
        self.topic, self.pad, self.per_second = topic, pad, per_second
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 2, "message.timeout.ms": 120_000, "batch.size": 100_000})
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

    def value(self, n: int) -> bytes:
        return f"v-{n}-".encode().ljust(self.pad, b"x")

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.producer.produce(self.topic, value=self.value(self.sent), partition=0,
                                      on_delivery=self.on_delivery)
                self.sent += 1
            except BufferError:
                self.producer.poll(0.01)
            self.producer.poll(0)
            if self.per_second:
                time.sleep(1 / self.per_second)

    def start(self) -> "Writer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        remaining = self.producer.flush(150)
        assert remaining == 0, f"{remaining} records never acknowledged nor failed"


def two_dir_broker(broker_factory, tmp_path: Path, overrides: dict[str, str] | None = None):
    d0, d1 = tmp_path / "d0", tmp_path / "d1"
    d0.mkdir()
    d1.mkdir()
    # The port is kept across restarts, so a producer started before one reconnects.
    broker = broker_factory({"log.dirs": f"{d0},{d1}", "offsets.topic.num.partitions": "1",
                             **(overrides or {})}, log_dir=d0, keep_port=True).start()
    return broker, d0, d1


def partition_dirs(d: Path, topic: str) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith(f"{topic}-"))


def where(topic: str, d0: Path, d1: Path) -> tuple[Path, Path]:
    """(the dir holding topic-0, the other one)."""
    if (d0 / f"{topic}-0").is_dir():
        return d0, d1
    assert (d1 / f"{topic}-0").is_dir(), (partition_dirs(d0, topic), partition_dirs(d1, topic))
    return d1, d0


def alter(java, bootstrap: str, *moves: tuple[str, int, Path | str], broker: int = BROKER_ID) -> list[str | None]:
    args = []
    for topic, partition, d in moves:
        args += [topic, str(partition), str(broker), str(d)]
    return [line["error"] for line in java.run("LogDirsOps", bootstrap, "alter", *args)]


def wait_moved(java, bootstrap: str, topic: str, dest: Path, timeout_s: int = 120, broker: int = BROKER_ID) -> dict:
    [line] = java.run("LogDirsOps", bootstrap, "wait", topic, "0", str(broker), str(dest), str(timeout_s),
                      timeout=timeout_s + 60)
    assert line["currentDir"] == str(dest) and line["futureDir"] is None, line
    return line


def assert_exactly_once(bootstrap: str, topic: str, acked: list[tuple[int, bytes]], writer: Writer) -> list:
    assert acked, "nothing was acknowledged"
    acked = sorted(acked)
    # Offsets 0..n-1, values v-0..v-(n-1): nothing lost, nothing twice, in order.
    assert [o for o, _ in acked] == list(range(len(acked)))
    assert [v for _, v in acked] == [writer.value(i) for i in range(len(acked))]
    got = consume_confluent(bootstrap, topic, len(acked) + 1, timeout_s=30, to_end=True)
    assert [(r.offset, r.value) for r in got] == acked, "consumed records differ from the acknowledged ones"
    return acked


def verify(strata_bin: Path, *dirs: Path) -> None:
    for d in dirs:
        proc = subprocess.run([str(strata_bin), "log", "verify", str(d)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"strata log verify {d} failed:\n{proc.stdout}\n{proc.stderr}"


def kafka_reader(java, partition_dir: Path, acked: list[tuple[int, bytes]]) -> None:
    [line] = java.run("ReadSegments", str(partition_dir), str(len(acked)))
    assert line["records"] == len(acked) and line["sha256"] == records_digest(acked), line


def test_move_while_producing(broker_factory, tmp_path, java, strata_bin):
    broker, d0, d1 = two_dir_broker(broker_factory, tmp_path, {"log.segment.delete.delay.ms": "1000"})
    create_topic(broker.bootstrap, TOPIC, config={"segment.bytes": "262144"})
    src, dest = where(TOPIC, d0, d1)

    # Kafka's errors through the Java admin: an unknown dir, a partition not hosted here
    # (remembered for later), the dir it already lives in.
    # (One request per replica: the admin keys its request by replica.)
    assert alter(java, broker.bootstrap, (TOPIC, 0, tmp_path / "nowhere"), ("not-here", 0, dest)) == [
        "LogDirNotFoundException", "ReplicaNotAvailableException"]
    assert alter(java, broker.bootstrap, (TOPIC, 0, src)) == [None]

    writer = Writer(broker.bootstrap, TOPIC, pad=200).start()
    while len(writer.acked) < 20_000:
        time.sleep(0.05)
    assert alter(java, broker.bootstrap, (TOPIC, 0, dest)) == [None]
    seen = wait_moved(java, broker.bootstrap, TOPIC, dest)
    at_move = len(writer.acked)
    while len(writer.acked) < at_move + 5_000:
        time.sleep(0.05)
    writer.stop()
    assert not writer.failed, writer.failed[:5]
    print(f"acknowledged {len(writer.acked)} records; describe polls {seen}")

    acked = assert_exactly_once(broker.bootstrap, TOPIC, writer.acked, writer)
    assert partition_dirs(dest, TOPIC) == [f"{TOPIC}-0"]
    # The old copy was renamed -delete and goes after log.segment.delete.delay.ms.
    deadline = time.monotonic() + 30
    while partition_dirs(src, TOPIC) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert partition_dirs(src, TOPIC) == []
    # Moving it back where it is now: no-op.
    assert alter(java, broker.bootstrap, (TOPIC, 0, dest)) == [None]
    broker.stop()
    verify(strata_bin, d0, d1)
    kafka_reader(java, dest / f"{TOPIC}-0", acked)
    # Served from its new dir after a restart.
    broker.start()
    assert [(r.offset, r.value) for r in consume_confluent(broker.bootstrap, TOPIC, len(acked))] == acked


def test_sigkill_during_a_move_loses_nothing(broker_factory, tmp_path, java, strata_bin):
    # The copy throttled to 4 MB/s, the producer writing ~2 MB/s: the kill lands mid-move.
    broker, d0, d1 = two_dir_broker(
        broker_factory, tmp_path, {"replica.alter.log.dirs.io.max.bytes.per.second": "4000000"})
    create_topic(broker.bootstrap, TOPIC, config={"segment.bytes": "1048576"})
    src, dest = where(TOPIC, d0, d1)
    writer = Writer(broker.bootstrap, TOPIC, pad=1000, per_second=2000).start()
    while len(writer.acked) < 12_000:
        time.sleep(0.05)
    assert alter(java, broker.bootstrap, (TOPIC, 0, dest)) == [None]
    deadline = time.monotonic() + 30
    future = []
    while time.monotonic() < deadline:
        future = [p for p in dest.iterdir() if p.name.endswith("-future")]
        if future and sum(f.stat().st_size for f in future[0].glob("*.log")) > 1_000_000:
            break
        time.sleep(0.05)
    assert future, "no future log appeared"
    acked_before_kill = list(writer.acked)
    print(f"killing mid-move: {len(acked_before_kill)} acknowledged, future {future[0].name}")
    broker.kill()
    writer.stopping.set()
    writer.thread.join(10)
    assert partition_dirs(src, TOPIC) == [f"{TOPIC}-0"], "the kill landed after the swap"

    broker.start()
    # The move resumes by itself after the restart (Kafka resumes it too).
    seen = wait_moved(java, broker.bootstrap, TOPIC, dest, timeout_s=120)
    print(f"after restart: {seen}")
    remaining = writer.producer.flush(60)
    assert remaining == 0, f"{remaining} records neither acknowledged nor failed after the restart"
    acked = sorted(set(writer.acked) | set(acked_before_kill))
    got = consume_confluent(broker.bootstrap, TOPIC, len(acked) + 1000, timeout_s=20, to_end=True)
    values = [(r.offset, r.value) for r in got]
    missing = set(acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
    assert len({v for _, v in values}) == len(values), "a record was stored twice"
    assert partition_dirs(dest, TOPIC) == [f"{TOPIC}-0"]
    broker.stop()
    verify(strata_bin, d0, d1)
    kafka_reader(java, dest / f"{TOPIC}-0", values)


def test_move_follower_and_leader_replicas_in_a_cluster(etcd, cluster_factory, java, strata_bin):
    cluster = cluster_factory(etcd.endpoint, count=3)
    # A second log dir on every broker, and /metrics. Followers fetch in long polls (a fetch is
    # answered after 500 ms unless 1 MiB is there), so when the leader's log is swapped some
    # acks=all requests are still waiting for the followers.
    for b in cluster.brokers.values():
        b.stop()
        b.overrides.update({"log.dirs": f"{b.log_dir},{b.log_dir}-b", "replica.fetch.wait.max.ms": "500",
                            "replica.fetch.min.bytes": "1048576",
                            "strata.metrics.listener": f"127.0.0.1:{free_port()}"})
        b.start()
    cluster.wait_for_members()
    create_topic(cluster.bootstrap, TOPIC, config={"segment.bytes": "262144", "min.insync.replicas": "2"},
                 replication_factor=3)

    def full_isr():
        info = cluster.metadata(None, [TOPIC]).topics[TOPIC].partitions[0]
        return info if info.leader >= 0 and len(info.isr) == 3 else None
    info = wait_until(full_isr, 60, "a full ISR")
    follower = next(r for r in info.replicas if r != info.leader)
    fb = cluster.brokers[follower]
    src, dest = where(TOPIC, fb.log_dir, Path(f"{fb.log_dir}-b"))

    # Below what the long polls carry, so the producer's queue stays short.
    writer = Writer(cluster.bootstrap, TOPIC, pad=200, per_second=500).start()
    while len(writer.acked) < 5_000:
        time.sleep(0.05)
    assert alter(java, fb.bootstrap, (TOPIC, 0, dest), broker=follower) == [None]
    wait_moved(java, fb.bootstrap, TOPIC, dest, broker=follower)
    at_move = len(writer.acked)
    while len(writer.acked) < at_move + 2_500:
        time.sleep(0.05)

    # Now the leader's replica. Requests parked for acks=all when the log is swapped must
    # complete on the new log: the old one is closed and its high watermark never moves again,
    # so a wait still reading it ends only at the request timeout (librdkafka's 30 s) with
    # REQUEST_TIMED_OUT, and the retry is answered as a duplicate. Whether a request is still
    # parked when the swap ends depends on how long the swap's fsyncs take, so the replica
    # moves there and back: two swaps.
    lb = cluster.brokers[info.leader]
    leader_src, leader_dest = where(TOPIC, lb.log_dir, Path(f"{lb.log_dir}-b"))
    for to in (leader_dest, leader_src):
        assert alter(java, lb.bootstrap, (TOPIC, 0, to), broker=info.leader) == [None]
        wait_moved(java, lb.bootstrap, TOPIC, to, broker=info.leader)
        at_move = len(writer.acked)
        while len(writer.acked) < at_move + 1_500:
            time.sleep(0.05)
    writer.stop()
    assert cluster.metadata(None, [TOPIC]).topics[TOPIC].partitions[0].leader == info.leader
    m = scrape(int(lb.overrides["strata.metrics.listener"].rsplit(":", 1)[1]))
    produces = value(m, "kafka_network_requestmetrics_totaltimems_count", request="Produce")
    slow = produces - value(m, "kafka_network_requestmetrics_totaltimems_bucket", request="Produce", le="10000.0")
    timed_out = total(m, "kafka_network_requestmetrics_errors_total", request="Produce", error="REQUEST_TIMED_OUT")
    print(f"leader: {produces:.0f} Produce requests, {slow:.0f} over 10 s, {timed_out:.0f} REQUEST_TIMED_OUT")
    assert (slow, timed_out) == (0, 0), "an acks=all wait outlived the log swap"
    assert not writer.failed, writer.failed[:5]
    acked = assert_exactly_once(cluster.bootstrap, TOPIC, writer.acked, writer)

    # The moved follower keeps replicating into its new dir: it rejoins (or stays in) the ISR
    # and ends byte-identical to the leader, which serves from the dir it moved back to.
    def logs(d: Path) -> bytes:
        return b"".join(f.read_bytes() for f in sorted((d / f"{TOPIC}-0").glob("*.log")))
    wait_until(lambda: full_isr() and logs(dest) == logs(leader_src), 60,
               "the moved replica to be in sync and byte-identical to the leader")
    assert partition_dirs(dest, TOPIC) == [f"{TOPIC}-0"]
    for moved_from in (src, leader_dest):
        assert not (moved_from / f"{TOPIC}-0").exists()
    kafka_reader(java, dest / f"{TOPIC}-0", acked)
    for b in cluster.brokers.values():
        b.stop()
    for b in cluster.brokers.values():
        verify(strata_bin, b.log_dir, Path(f"{b.log_dir}-b"))
