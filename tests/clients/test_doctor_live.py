"""`strata log doctor` against a live broker and on the statistics a live broker keeps.

Guards the table's 8th/9th-row answers end to end: a confluent-kafka group whose committed
offset retention has deleted is named under `consumers_fall_behind_retention` by
`--bootstrap-server` (read from ListGroups + OffsetFetch + ListOffsets), while a caught-up group
is not; and the broker really writes `cleaner-statistics.json` after cleaning a compacted topic,
from which the offline doctor names `compaction_uses_much_cpu` with the cleaner's figures.
"""

from __future__ import annotations

import json
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from records import create_topic

TIMEOUT_S = 30


def produce(bootstrap: str, topic: str, count: int, keys: int | None = None, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 2000})
    errors = []

    def report(err, _msg):
        if err is not None:
            errors.append(err)

    for i in range(start, start + count):
        key = f"k{i % keys}" if keys else f"k{i}"
        producer.produce(topic, key=key.encode(), value=b"v" * 100 + str(i).encode(), partition=0,
                         on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """Commits `offset` for `group` on partition 0, then leaves."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks-probe"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def doctor(strata_bin, *args: str) -> dict:
    out = subprocess.run([str(strata_bin), "log", "doctor", "--json", *args],
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def findings_of(report: dict, topic: str) -> list[dict]:
    return [f for p in report["partitions"] if p["topic"] == topic for f in p["findings"]]


def test_a_group_behind_retention_is_named_and_a_caught_up_one_is_not(broker_factory, strata_bin):
    b = broker_factory({"log.retention.check.interval.ms": "200"}).start()
    topic = "aging"
    create_topic(b.bootstrap, topic, config={"retention.ms": "4000", "segment.bytes": "4096"})
    produce(b.bootstrap, topic, 50)
    commit(b.bootstrap, "behind", topic, 5)
    time.sleep(5)  # the first records pass retention.ms
    produce(b.bootstrap, topic, 50, start=50)
    _, end = watermarks(b.bootstrap, topic)
    commit(b.bootstrap, "caught-up", topic, end)
    deadline = time.monotonic() + TIMEOUT_S
    while watermarks(b.bootstrap, topic)[0] <= 5:
        if time.monotonic() > deadline:
            why = json.dumps(findings_of(doctor(strata_bin, "--bootstrap-server", b.bootstrap, "--topic", topic,
                                                str(b.log_dir)), topic), indent=1)
            raise AssertionError(f"retention never passed the group's position: {why}")
        time.sleep(0.2)

    report = doctor(strata_bin, "--bootstrap-server", b.bootstrap, str(b.log_dir))
    assert report["config_source"] == {"broker": {"bootstrap_server": b.bootstrap}}
    named = [f for f in findings_of(report, topic) if f["symptom"] == "consumers_fall_behind_retention"]
    groups = {f["numbers"]["group"] for f in named}
    assert "behind" in groups, json.dumps(findings_of(report, topic), indent=1)
    assert "caught-up" not in groups
    behind = next(f for f in named if f["numbers"]["group"] == "behind")
    assert behind["cause"] in ("group_position_below_log_start", "group_position_in_next_deleted_segment")
    if behind["cause"] == "group_position_below_log_start":
        assert behind["numbers"]["committed_offset"] == 5
        assert behind["numbers"]["log_start_offset"] > 5
    assert "retention.ms" in behind["settings"]


def test_the_broker_keeps_cleaner_statistics_and_the_doctor_reads_them(broker_factory, strata_bin):
    b = broker_factory({"log.cleaner.backoff.ms": "100"}).start()
    topic = "keys"
    create_topic(b.bootstrap, topic, config={
        "cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01"})
    produce(b.bootstrap, topic, 600, keys=10)
    stats = b.log_dir / "cleaner-statistics.json"
    deadline = time.monotonic() + TIMEOUT_S
    while not stats.is_file():
        assert time.monotonic() < deadline, "no cleaner-statistics.json after a cleaning"
        time.sleep(0.2)
    # The cleaner is done once the file stays the same for 10 backoffs.
    last, since = stats.read_text(), time.monotonic()
    while time.monotonic() - since < 1.0:
        assert time.monotonic() < deadline + TIMEOUT_S, "the cleaner never went quiet"
        time.sleep(0.1)
        now_text = stats.read_text()
        if now_text != last:
            last, since = now_text, time.monotonic()
    records = json.loads(last)["records"]
    mine = [r for r in records if r["topic"] == topic]
    assert mine and mine[0]["messages_read"] > mine[0]["messages_written"]
    assert mine[0]["config"]["min_cleanable_dirty_ratio"] == 0.01

    report = doctor(strata_bin, str(b.log_dir))
    ours = [f for f in findings_of(report, topic) if f["symptom"] == "compaction_uses_much_cpu"]
    causes = {f["cause"]: f for f in ours}
    assert "cleaner_cpu_share" in causes, json.dumps(findings_of(report, topic), indent=1)
    assert causes["cleaner_cpu_share"]["numbers"]["partition_cleanings"] >= 1
    # When the cleaner ran relative to the producer decides how many segments each cleaning read:
    # the doctor must name small segments exactly when the recorded cleanings read 8 or more.
    mean_segments = sum(r["segments_cleaned"] for r in mine) / len(mine)
    assert causes["cleaner_cpu_share"]["numbers"]["partition_cleanings"] == len(mine)
    assert ("segments_too_small" in causes) == (mean_segments >= 8), (mean_segments, list(causes))
    if "segments_too_small" in causes:
        assert causes["segments_too_small"]["numbers"]["segment_bytes"] == 4096
