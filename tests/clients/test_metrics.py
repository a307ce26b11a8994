"""Prometheus metrics on `strata.metrics.listener`, checked against real clients (confluent-kafka):
byte, message and request counters and the latency histogram move with traffic; the log gauges
equal ListOffsets and the segment files; a stopped consumer group's lag is exactly what was
produced after its commit; the cleaner gauges appear once a compacted topic was cleaned; and every
metric the Grafana dashboard queries is one the broker exports."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker import free_port
from cluster import wait_until
from records import create_topic, end_offset

ROOT = Path(__file__).resolve().parent.parent.parent
DASHBOARD = ROOT / "ops" / "grafana" / "strata-dashboard.json"
METRICS_DOC = ROOT / "docs" / "metrics.md"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    """Sample lines of /metrics: (name, labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    assert text.endswith("# EOF\n"), text[-200:]
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsable sample line: {line!r}"
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name: str, **labels) -> float:
    key = (name, frozenset(labels.items()))
    assert key in samples, f"{name}{labels} not exported; names: {sorted({n for n, _ in samples})}"
    return samples[key]


def total(samples, name: str, **labels) -> float:
    """Sum of `name` over series whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def start_broker(broker_factory, extra: dict[str, str] | None = None):
    port = free_port()
    b = broker_factory({"strata.metrics.listener": f"127.0.0.1:{port}", **(extra or {})}).start()
    return b, port


def produce(bootstrap: str, topic: str, n: int, prefix: str, key_space: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        key = f"k{i % key_space}" if key_space else None
        p.produce(topic, value=f"{prefix}-{i}".encode(), key=key, partition=0)
    assert p.flush(30) == 0


def consume_and_commit(bootstrap: str, topic: str, group: str, n: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < n and time.monotonic() < deadline:
        msgs = c.consume(num_messages=500, timeout=1)
        got += sum(1 for m in msgs if m.error() is None)
    assert got == n, f"consumed {got} of {n}"
    c.commit(asynchronous=False)
    c.close()


def test_traffic_moves_the_counters_and_log_gauges_match_the_partition(broker_factory):
    b, port = start_broker(broker_factory)
    topic = "metrics-traffic"
    create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, 500, "a")
    during = scrape(port)
    produce(b.bootstrap, topic, 500, "b")
    consume_and_commit(b.bootstrap, topic, "metrics-reader", 1000)
    after = scrape(port)

    bytes_in = value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    assert 0 < value(during, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) < bytes_in
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 1000
    # Everything appended is in the one segment: the bytes counted in are the log's size,
    # which is what the segment files hold.
    size = value(after, "kafka_log_log_size", topic=topic, partition="0")
    assert bytes_in == size
    files = sum(f.stat().st_size for f in (b.log_dir / f"{topic}-0").glob("*.log"))
    assert size == files
    assert value(after, "kafka_log_log_logendoffset", topic=topic, partition="0") == end_offset(b.bootstrap, topic) == 1000
    assert value(after, "kafka_log_log_logstartoffset", topic=topic, partition="0") == 0
    assert value(after, "kafka_log_log_numlogsegments", topic=topic, partition="0") == 1
    # The consumer read every byte at least once.
    assert value(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) >= size
    assert value(after, "kafka_server_brokertopicmetrics_bytesout_total") >= size

    for request in ("Produce", "Fetch"):
        moved = total(after, "kafka_network_requestmetrics_requests_total", request=request) \
            - total(during, "kafka_network_requestmetrics_requests_total", request=request)
        assert moved > 0, request
        hist = value(after, "kafka_network_requestmetrics_totaltimems_count", request=request)
        assert hist > value(during, "kafka_network_requestmetrics_totaltimems_count", request=request) \
            if request == "Produce" else hist > 0
        assert value(after, "kafka_network_requestmetrics_totaltimems_bucket", request=request, le="+Inf") == hist
    assert total(after, "kafka_network_requestmetrics_requests_total", request="Produce") == \
        value(after, "kafka_network_requestmetrics_totaltimems_count", request="Produce")
    assert value(after, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= 1
    assert value(after, "kafka_server_socket_server_metrics_connection_creation_total", listener="PLAINTEXT") >= 2
    assert value(after, "process_resident_memory_bytes") > 0
    assert value(after, "process_cpu_seconds_total") > 0


def test_a_stopped_group_lags_by_exactly_what_was_produced_after_its_commit(broker_factory):
    b, port = start_broker(broker_factory)
    topic, group = "metrics-lag", "metrics-lagging"
    create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, 300, "before")
    consume_and_commit(b.bootstrap, topic, group, 300)
    n = 237
    produce(b.bootstrap, topic, n, "after")

    s = scrape(port)
    assert value(s, "kafka_consumergroup_group_offset", group=group, topic=topic, partition="0") == 300
    assert value(s, "kafka_consumergroup_group_lag", group=group, topic=topic, partition="0") == n
    assert value(s, "kafka_consumergroup_group_max_lag", group=group) == n
    assert value(s, "kafka_consumergroup_group_sum_lag", group=group) == n
    assert value(s, "kafka_partition_latest_offset", topic=topic, partition="0") == 300 + n
    assert value(s, "kafka_partition_earliest_offset", topic=topic, partition="0") == 0


def test_group_counts_follow_a_consumer_group_and_a_classic_group(broker_factory):
    """Kafka's group-coordinator-metrics: group-count per protocol, consumer-group-count per
    KIP-848 state, moved by a real librdkafka member with `group.protocol=consumer`; its commits
    show in the lag metrics like a classic group's."""
    b, port = start_broker(broker_factory, {"group.consumer.min.heartbeat.interval.ms": "100",
                                            "group.consumer.heartbeat.interval.ms": "500"})
    topic, classic, kip848 = "metrics-groups", "metrics-classic", "metrics-kip848"
    create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, 200, "g")
    consume_and_commit(b.bootstrap, topic, classic, 200)

    def counts() -> tuple[float, float, float, float]:
        s = scrape(port)
        return (value(s, "kafka_server_group_coordinator_metrics_group_count", protocol="classic"),
                value(s, "kafka_server_group_coordinator_metrics_group_count", protocol="consumer"),
                value(s, "kafka_server_group_coordinator_metrics_consumer_group_count", state="stable"),
                value(s, "kafka_server_group_coordinator_metrics_consumer_group_count", state="empty"))
    assert counts() == (1, 0, 0, 0)

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": kip848, "group.protocol": "consumer",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < 150 and time.monotonic() < deadline:
        got += sum(1 for m in c.consume(num_messages=150 - got, timeout=1) if m.error() is None)
    assert got == 150, f"consumed {got} of 150"
    c.commit(offsets=[TopicPartition(topic, 0, 150)], asynchronous=False)
    wait_until(lambda: counts() == (1, 1, 1, 0), 30, "one classic group and one Stable consumer group")
    s = scrape(port)
    assert value(s, "kafka_consumergroup_group_lag", group=kip848, topic=topic, partition="0") == 50
    assert value(s, "kafka_consumergroup_group_lag", group=classic, topic=topic, partition="0") == 0
    assert value(s, "kafka_server_group_coordinator_metrics_consumer_group_count", state="reconciling") == 0
    # The last member leaves: the group stays, Empty, with its offsets.
    c.close()
    wait_until(lambda: counts() == (1, 1, 0, 1), 30, "the consumer group Empty after its member left")


def test_cleaner_metrics_appear_after_a_compacted_topic_is_cleaned(broker_factory):
    b, port = start_broker(broker_factory, {"log.cleaner.backoff.ms": "100"})
    topic = "metrics-compacted"
    create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"})
    before = scrape(port)
    assert value(before, "strata_log_cleaner_cleanings_total") == 0
    # One flush per round: separate batches, so the 2 KiB segments roll.
    for r in range(20):
        produce(b.bootstrap, topic, 100, f"v{r}", key_space=10)

    s = wait_until(lambda: (lambda s: s if value(s, "strata_log_cleaner_cleanings_total") >= 1 else None)(scrape(port)),
                   60, "a cleaning of the compacted topic")
    # Ten keys of two thousand records: most of what was read is dropped.
    assert 0 < value(s, "kafka_log_logcleaner_cleaner_recopy_percent") < 50
    assert value(s, "kafka_log_logcleaner_max_buffer_utilization_percent") > 0
    assert value(s, "kafka_log_logcleaner_max_clean_time_secs") >= 0
    assert value(s, "kafka_log_logcleaner_deadthreadcount") == 0
    assert value(s, "kafka_log_logcleanermanager_uncleanable_partitions_count") == 0
    assert value(s, "kafka_log_logcleanermanager_max_dirty_percent") > 0
    assert value(s, "strata_log_cleaner_read_bytes_total") > value(s, "strata_log_cleaner_written_bytes_total") > 0


def dashboard_metric_names() -> set[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = []

    def walk(panels):
        for p in panels:
            exprs.extend(t["expr"] for t in p.get("targets", []) if "expr" in t)
            walk(p.get("panels", []))
    walk(dash["panels"])
    exprs.extend(v.get("query", "") for v in dash.get("templating", {}).get("list", [])
                 if isinstance(v.get("query", ""), str))
    names = set()
    for e in exprs:
        for n in re.findall(r"\b((?:kafka|process|strata)_[a-z0-9_]+)", e):
            names.add(re.sub(r"_(bucket|count|sum)$", "", n) if "totaltimems" in n else n)
    return names


def test_every_dashboard_metric_is_exported(broker_factory):
    b, port = start_broker(broker_factory)
    topic = "metrics-dashboard"
    create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, 50, "d")
    consume_and_commit(b.bootstrap, topic, "metrics-dash", 50)
    exported = {re.sub(r"_(bucket|count|sum)$", "", n) if "totaltimems" in n else n for n, _ in scrape(port)}
    names = dashboard_metric_names()
    assert len(names) >= 15, names
    # The remote tier's series exist only with remote.log.storage.system.enable=true (the
    # tiered tests run it against S3); they must at least be the documented ones.
    doc = METRICS_DOC.read_text()
    tiered = {n for n in names if n.startswith("kafka_server_brokertopicmetrics_remote")}
    assert tiered, "the dashboard shows the remote copy lag"
    assert not {n for n in tiered if f"`{n}`" not in doc}, "undocumented remote metrics"
    missing = names - tiered - exported
    assert not missing, f"the dashboard queries metrics the broker does not export: {sorted(missing)}"
