"""Tiered storage (KIP-405) end to end with librdkafka (confluent-kafka).

Guards the whole remote path as a real client sees it: sealed segments are copied to the
remote tier and dropped locally by local.retention.bytes, a consumer reading from offset 0
gets every record byte-identical from remote storage (one partition and several at once),
offsets_for_times is answered across tiers (librdkafka and the Java client), the catalogue survives a restart and a SIGKILL
mid-copy, an S3-API store (moto) that stalls mid-copy is caught up afterwards, a SIGKILL in
the middle of remote deletes (expiration) is finished by the next expiration pass, and Kafka's
tiered topic-config rules reach AdminClient as INVALID_CONFIG. After every fault test the broker
is stopped and `strata tier fsck` must report the remote tier clean (no orphan objects, no
half-finished copy or delete, nothing missing).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from broker import BrokerError
from records import ADMIN_TIMEOUT_S, Record, admin, assert_records, consume_confluent, create_topic, make_records

OFFLOAD_TIMEOUT_S = 60.0
TIERED_BROKER = {
    "remote.log.storage.system.enable": "true",
    "remote.log.manager.task.interval.ms": "200",
    "log.retention.check.interval.ms": "200",
    "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
}
# Small segments so a few hundred records roll many; total retention unlimited so only
# local.retention.bytes (=1: drop as soon as copied) removes anything.
TIERED_TOPIC = {
    "remote.storage.enable": "true",
    "segment.bytes": "4096",
    "retention.ms": "-1",
    "local.retention.bytes": "1",
}


@pytest.fixture
def tiered_broker(broker_factory):
    return broker_factory(TIERED_BROKER).start()


def produce(bootstrap: str, topic: str, records: list[Record], partitions: int = 1) -> None:
    """Produces record i to partition i % partitions and waits for every ack."""
    # batch.size below segment.bytes: a batch larger than a segment is rejected.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1024,
                         "enable.idempotence": False})
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    for i, r in enumerate(records):
        producer.produce(topic, value=r.value, key=r.key, headers=r.headers, timestamp=r.timestamp,
                         partition=i % partitions, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(60) == 0, "records still queued after 60 s"
    assert not failures, failures[:5]


def local_logs(broker, topic: str, partition: int) -> list[str]:
    return sorted(n for n in os.listdir(broker.log_dir / f"{topic}-{partition}") if n.endswith(".log"))


def wait_offloaded(broker, topic: str, partitions: int, remote_dir: Path | None = None) -> None:
    """Waits (deadline) until every partition keeps only its active segment locally."""
    deadline = time.monotonic() + OFFLOAD_TIMEOUT_S
    while True:
        counts = [len(local_logs(broker, topic, p)) for p in range(partitions)]
        if all(c == 1 for c in counts):
            break
        assert time.monotonic() < deadline, f"local segments never dropped: {counts}\n{broker.output_tail()}"
        time.sleep(0.1)
    if remote_dir is not None:
        objects = list(remote_dir.glob(f"kafka-tiered-storage/{topic}-*/*.log"))
        assert objects, f"no remote segments under {remote_dir}"


def earliest(bootstrap: str, topic: str, partition: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eo-{topic}"})
    try:
        low, _ = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=ADMIN_TIMEOUT_S)
        return low
    finally:
        c.close()


# Debug lines of the remote-log tasks, so a test can wait for whole expiration passes and for a
# delete to be in flight instead of sleeping.
TASK_LOG = "info,strata_tiered=debug"


def latest_output(broker) -> str:
    return broker.output_files[-1].read_text(errors="replace")


def expiration_passes(broker, topic: str, partition: int = 0) -> int:
    """Expiration passes finished for the partition since the broker's last start."""
    return sum(1 for line in latest_output(broker).splitlines()
               if "expiration pass finished" in line and f"tp={topic}-{partition} " in line)


def wait_expiration_passes(broker, topic: str, passes: int = 2) -> None:
    """Waits (deadline) until `passes` more expiration passes of partition 0 have finished."""
    want = expiration_passes(broker, topic) + passes
    deadline = time.monotonic() + OFFLOAD_TIMEOUT_S
    while expiration_passes(broker, topic) < want:
        assert time.monotonic() < deadline, f"no expiration pass finished\n{broker.output_tail()}"
        time.sleep(0.05)


def wait_output(broker, needle: str) -> None:
    deadline = time.monotonic() + OFFLOAD_TIMEOUT_S
    while needle not in latest_output(broker):
        assert time.monotonic() < deadline, f"broker never logged {needle!r}\n{broker.output_tail()}"
        time.sleep(0.01)


def assert_fsck_clean(broker) -> None:
    """`strata tier fsck` on the stopped broker's log dir and settings exits 0 and says clean."""
    assert not broker.running(), "fsck needs the broker stopped"
    cmd = [str(broker.binary), "tier", "fsck", "--log-dir", str(broker.log_dir)]
    for key, value in broker.overrides.items():
        cmd += ["--override", f"{key}={value}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    report = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, report
    assert done.stdout.strip().splitlines()[-1] == "clean", report
    assert "segments in metadata: 0" not in done.stdout, f"fsck saw no catalogue at all\n{report}"


def split(records: list[Record], partitions: int, p: int) -> list[Record]:
    return records[p::partitions]


def test_offload_then_consume_everything_from_remote_and_after_restart(tiered_broker, tmp_path):
    topic = "tiered-one"
    create_topic(tiered_broker.bootstrap, topic, 1, TIERED_TOPIC)
    records = make_records("t1", 600, value_pad=60)
    produce(tiered_broker.bootstrap, topic, records)
    wait_offloaded(tiered_broker, topic, 1, tiered_broker.log_dir.parent / "remote-tier")
    first_local = int(local_logs(tiered_broker, topic, 0)[0].split(".")[0])
    assert first_local > 0, "local log start must have moved"
    assert earliest(tiered_broker.bootstrap, topic, 0) == 0, "earliest spans the remote tier"

    assert_records(consume_confluent(tiered_broker.bootstrap, topic, 600), records)
    # From the middle of a remote segment.
    assert_records(consume_confluent(tiered_broker.bootstrap, topic, 100, start_offset=123), records[123:223], 123)

    c = Consumer({"bootstrap.servers": tiered_broker.bootstrap, "group.id": "tiered-times"})
    try:
        want = records[250].timestamp
        found = c.offsets_for_times([TopicPartition(topic, 0, want)], timeout=ADMIN_TIMEOUT_S)
        assert found[0].offset == 250, found
    finally:
        c.close()

    tiered_broker.stop()
    tiered_broker.start()
    # The log-start-offset checkpoint keeps the partition's start (0), not the local one.
    assert earliest(tiered_broker.bootstrap, topic, 0) == 0
    assert int(local_logs(tiered_broker, topic, 0)[0].split(".")[0]) >= first_local
    assert_records(consume_confluent(tiered_broker.bootstrap, topic, 600), records)
    tiered_broker.stop()
    checkpoint = (tiered_broker.log_dir / "log-start-offset-checkpoint").read_text().split("\n")
    assert f"{topic} 0 0" in checkpoint, checkpoint


def test_java_consumer_reads_the_remote_tier(tiered_broker, java):
    """The Java client's beginningOffsets / offsetsForTimes / fetch, all answered from remote."""
    topic = "tiered-java"
    create_topic(tiered_broker.bootstrap, topic, 1, TIERED_TOPIC)
    records = make_records("tj", 400, value_pad=60)
    produce(tiered_broker.bootstrap, topic, records)
    wait_offloaded(tiered_broker, topic, 1)
    target = 77
    lines = java.run("ConsumeAssign", tiered_broker.bootstrap, topic, 0, records[target].timestamp)
    by_event: dict[str, list[dict]] = {}
    for line in lines:
        by_event.setdefault(line["event"], []).append(line)
    assert by_event["offsets"] == [{"event": "offsets", "beginning": 0, "end": len(records)}]
    assert by_event["offsetForTime"] == [
        {"event": "offsetForTime", "offset": target, "timestamp": records[target].timestamp}]
    got = [Record(r["key"].encode(), r["value"].encode(), [(k, v.encode()) for k, v in r["headers"]],
                  r["timestamp"], r["offset"]) for r in by_event.get("record", [])]
    assert_records(got, records[target:], first_offset=target)


def test_one_fetch_serves_several_remote_partitions(tiered_broker):
    topic = "tiered-multi"
    partitions = 4
    create_topic(tiered_broker.bootstrap, topic, partitions, TIERED_TOPIC)
    records = make_records("tm", 800, value_pad=60)
    produce(tiered_broker.bootstrap, topic, records, partitions)
    wait_offloaded(tiered_broker, topic, partitions)
    consumer = Consumer({
        "bootstrap.servers": tiered_broker.bootstrap, "group.id": "tiered-multi", "enable.auto.commit": False,
        # One fetch request carries all four partitions; each may get up to 64 KiB.
        "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 16,
    })
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[int, list[Record]] = {p: [] for p in range(partitions)}
        first_round: set[int] = set()
        deadline = time.monotonic() + 60
        while sum(map(len, got.values())) < len(records) and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=10_000, timeout=0.5)
            for msg in batch:
                if msg.error():
                    raise KafkaException(msg.error())
                _, ts = msg.timestamp()
                got[msg.partition()].append(Record(msg.key(), msg.value(), list(msg.headers() or []), ts, msg.offset()))
            if batch and not first_round:
                first_round = {m.partition() for m in batch}
        for p in range(partitions):
            assert_records(got[p], split(records, partitions, p))
        assert len(first_round) > 1, f"the first fetched batch held only partitions {first_round}"
    finally:
        consumer.close()


def test_sigkill_during_copies_then_catch_up(broker_factory, monkeypatch):
    monkeypatch.setenv("RUST_LOG", TASK_LOG)
    tiered_broker = broker_factory(TIERED_BROKER).start()
    topic = "tiered-crash"
    create_topic(tiered_broker.bootstrap, topic, 1, TIERED_TOPIC)
    records = make_records("tc", 1500, value_pad=60)
    produce(tiered_broker.bootstrap, topic, records)
    remote = tiered_broker.log_dir.parent / "remote-tier"
    deadline = time.monotonic() + OFFLOAD_TIMEOUT_S
    while not list(remote.glob(f"kafka-tiered-storage/{topic}-*/*.log")):
        assert time.monotonic() < deadline, "no copy started"
        time.sleep(0.01)
    tiered_broker.kill()  # SIGKILL while the copy task works through the backlog
    tiered_broker.start()
    wait_offloaded(tiered_broker, topic, 1, remote)
    assert_records(consume_confluent(tiered_broker.bootstrap, topic, 1500), records)
    # The copy cut short by the kill (COPY_SEGMENT_STARTED) is cleaned up by expiration,
    # not left behind: after whole passes the catalogue and the directory agree.
    wait_expiration_passes(tiered_broker, topic)
    tiered_broker.stop()
    assert_fsck_clean(tiered_broker)


def test_tiered_topic_config_rules_reach_the_admin_client(tiered_broker, broker_factory):
    client = admin(tiered_broker.bootstrap)

    def create_error(name: str, config: dict[str, str]) -> str:
        futures = client.create_topics([NewTopic(name, 1, 1, config=config)], operation_timeout=ADMIN_TIMEOUT_S)
        with pytest.raises(KafkaException) as err:
            futures[name].result(timeout=ADMIN_TIMEOUT_S)
        assert err.value.args[0].name() == "INVALID_CONFIG", err.value
        return err.value.args[0].str()

    assert "compacted" in create_error("c1", {"remote.storage.enable": "true", "cleanup.policy": "compact"})
    assert "local.retention.bytes" in create_error(
        "c2", {"remote.storage.enable": "true", "retention.bytes": "1000", "local.retention.bytes": "2000"})
    assert "local.retention.ms" in create_error(
        "c3", {"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "-1"})

    create_topic(tiered_broker.bootstrap, "c4", 1, {"remote.storage.enable": "true"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "c4", incremental_configs=[
        ConfigEntry("remote.storage.enable", "false", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as err:
        client.incremental_alter_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)
    assert err.value.args[0].name() == "INVALID_CONFIG"
    assert "remote.log.delete.on.disable" in err.value.args[0].str()

    plain = broker_factory().start()
    plain_admin = admin(plain.bootstrap)
    futures = plain_admin.create_topics(
        [NewTopic("c5", 1, 1, config={"remote.storage.enable": "true"})], operation_timeout=ADMIN_TIMEOUT_S)
    with pytest.raises(KafkaException) as err:
        futures["c5"].result(timeout=ADMIN_TIMEOUT_S)
    assert "Tiered Storage functionality is disabled" in err.value.args[0].str()


def test_metadata_topic_has_unlimited_retention_and_keeps_a_users_change(tiered_broker):
    """`__remote_log_metadata` is created as Kafka creates it (retention.ms=-1, delete policy,
    rlmm.config...num.partitions partitions); a restart neither resets it to the broker's
    default retention (which would expire the catalogue) nor overwrites a user's change."""
    name = "__remote_log_metadata"
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)

    def described() -> dict:
        client = admin(tiered_broker.bootstrap)
        return client.describe_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)

    def partitions() -> int:
        client = admin(tiered_broker.bootstrap)
        return len(client.list_topics(name, timeout=ADMIN_TIMEOUT_S).topics[name].partitions)

    cfg = described()
    assert (cfg["retention.ms"].value, cfg["cleanup.policy"].value) == ("-1", "delete")
    assert partitions() == int(TIERED_BROKER["rlmm.config.remote.log.metadata.topic.num.partitions"])
    tiered_broker.stop()
    tiered_broker.start()
    assert described()["retention.ms"].value == "-1", "a restart must not apply the broker default"

    client = admin(tiered_broker.bootstrap)
    change = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
        ConfigEntry("retention.ms", "2592000000", incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([change])[change].result(timeout=ADMIN_TIMEOUT_S)
    tiered_broker.stop()
    tiered_broker.start()
    assert described()["retention.ms"].value == "2592000000", "startup overwrote the user's config"


class Moto:
    """A moto S3 server on a free loopback port (stopped on teardown)."""

    def __init__(self, tmp: Path):
        exe = shutil.which("moto_server")
        if exe is None:
            pytest.fail("moto_server not found: run scripts/install-test-deps.sh (installs moto[server])")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=open(tmp / "moto.log", "wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=1).read()
                return
            except OSError:
                assert time.monotonic() < deadline, "moto_server did not start"
                time.sleep(0.1)

    def create_bucket(self, name: str) -> None:
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(req, timeout=10).read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def moto(tmp_path):
    server = Moto(tmp_path)
    yield server
    server.stop()


def s3_settings(moto: Moto) -> dict[str, str]:
    moto.create_bucket("strata-tier")
    return {
        "strata.remote.storage.uri": "s3://strata-tier/cluster-1",
        "rsm.config.s3.endpoint": moto.endpoint,
        "rsm.config.s3.region": "us-east-1",
        "rsm.config.s3.access.key.id": "testing",
        "rsm.config.s3.secret.access.key": "testing",
    }


def test_s3_backend_with_a_store_that_stalls_mid_copy(broker_factory, moto, monkeypatch):
    monkeypatch.setenv("RUST_LOG", TASK_LOG)
    broker = broker_factory({**TIERED_BROKER, **s3_settings(moto)}).start()
    topic = "tiered-s3"
    create_topic(broker.bootstrap, topic, 1, TIERED_TOPIC)
    first = make_records("s3a", 400, value_pad=60)
    produce(broker.bootstrap, topic, first)
    wait_offloaded(broker, topic, 1)

    # The store stops answering mid-way: copies stall, local data stays, produce still works.
    moto.proc.send_signal(signal.SIGSTOP)
    second = make_records("s3b", 400, base_ts=first[-1].timestamp + 1, value_pad=60)
    produce(broker.bootstrap, topic, second)
    time.sleep(1.0)  # let the copy task run into the stalled store
    assert len(local_logs(broker, topic, 0)) > 1, "nothing may be dropped locally while copies cannot finish"
    # An unfinished copy is not counted anywhere: the earliest offset has not moved.
    assert earliest(broker.bootstrap, topic, 0) == 0
    moto.proc.send_signal(signal.SIGCONT)
    wait_offloaded(broker, topic, 1)
    assert_records(consume_confluent(broker.bootstrap, topic, 800), first + second)
    wait_expiration_passes(broker, topic)
    broker.stop()
    assert_fsck_clean(broker)


@pytest.mark.parametrize("backend", ["local-dir", "s3"])
def test_sigkill_during_a_remote_delete_then_expiration_finishes_it(broker_factory, moto, monkeypatch, backend):
    """Total retention expires remote segments; the broker is SIGKILLed while they are being
    deleted. On S3 the store is stopped first, so the kill lands with a delete certainly in
    flight (DELETE_SEGMENT_STARTED written, objects not yet gone); on the local directory it
    lands wherever the deletes have got to. After a restart the next expiration passes drive
    every half-finished delete to DELETE_SEGMENT_FINISHED, keep every segment that retention
    keeps, leave no orphan, and fsck is clean."""
    monkeypatch.setenv("RUST_LOG", TASK_LOG)
    settings = {**TIERED_BROKER, **(s3_settings(moto) if backend == "s3" else {})}
    broker = broker_factory(settings).start()
    topic = "tiered-delete-crash"
    create_topic(broker.bootstrap, topic, 1, TIERED_TOPIC)
    # Old records (2024) fall out of a one-hour retention.ms; records stamped now stay.
    old = make_records("dko", 500, value_pad=60)
    new = make_records("dkn", 300, base_ts=int(time.time() * 1000), value_pad=60)
    records = old + new
    produce(broker.bootstrap, topic, old)
    produce(broker.bootstrap, topic, new)
    wait_offloaded(broker, topic, 1)
    assert earliest(broker.bootstrap, topic, 0) == 0

    if backend == "s3":
        moto.proc.send_signal(signal.SIGSTOP)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    client = admin(broker.bootstrap)
    client.incremental_alter_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)
    wait_output(broker, "DELETE_SEGMENT_STARTED written")
    broker.kill()
    if backend == "s3":
        moto.proc.send_signal(signal.SIGCONT)

    broker.start()
    if backend == "s3":
        # The delete cut short by the kill is retried, not forgotten.
        wait_output(broker, "reason=UnfinishedDelete")
    deadline = time.monotonic() + OFFLOAD_TIMEOUT_S
    while (start := earliest(broker.bootstrap, topic, 0)) == 0:
        assert time.monotonic() < deadline, f"expiration never raised the log start\n{broker.output_tail()}"
        time.sleep(0.05)
    wait_expiration_passes(broker, topic)
    start = earliest(broker.bootstrap, topic, 0)
    # Only segments made entirely of old records went; everything from the first segment
    # holding a new record on is still there, byte-identical.
    assert 0 < start <= len(old), start
    got = consume_confluent(broker.bootstrap, topic, len(records) - start, start_offset=start)
    assert_records(got, records[start:], start)
    broker.stop()
    assert_fsck_clean(broker)


def test_switching_tiered_storage_off_with_tiered_topics_is_refused_at_start(tiered_broker):
    """Kafka refuses to start with remote.log.storage.system.enable=false while a topic has
    remote.storage.enable=true (its offsets below the local start would be served by nobody);
    Strata does the same, naming the topics, and starts again once the switch is back on."""
    create_topic(tiered_broker.bootstrap, "tiered-off", 1, TIERED_TOPIC)
    assert tiered_broker.stop() == 0
    tiered_broker.overrides["remote.log.storage.system.enable"] = "false"
    with pytest.raises(BrokerError) as refused:
        tiered_broker.start()
    message = str(refused.value)
    assert "You have to delete all topics with the property remote.storage.enable=true" in message
    assert "tiered-off" in message
    tiered_broker.overrides["remote.log.storage.system.enable"] = "true"
    tiered_broker.start()
    assert earliest(tiered_broker.bootstrap, "tiered-off", 0) == 0
