"""A real Prometheus server (the Debian `prometheus` package, installed by
scripts/install-test-deps.sh) scrapes the broker's `strata.metrics.listener` every second: it
parses the exposition, `rate()` over the bytes-in counter is positive while producing, and a
stopped consumer group's lag is exactly what was produced after its commit, both read back
through Prometheus' HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from broker import free_port, port_accepts
from cluster import wait_until
from records import create_topic
from test_metrics import consume_and_commit, produce, start_broker

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


@pytest.fixture
def prometheus(tmp_path):
    """Starts Prometheus on a free loopback port scraping the targets given to it; killed by pid."""
    procs = []

    def start(target_port: int) -> int:
        assert Path(PROMETHEUS).is_file(), f"{PROMETHEUS} missing: run scripts/install-test-deps.sh"
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: strata\n    scrape_interval: 1s\n    scrape_timeout: 900ms\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n")
        port = free_port()
        log = open(tmp_path / "prometheus.log", "w")
        p = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                              f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        wait_until(lambda: p.poll() is None and port_accepts(port), 30,
                   f"prometheus listening ({(tmp_path / 'prometheus.log').read_text()[-2000:]})")
        return port

    yield start
    for p in procs:
        p.kill()
        p.wait(10)


def query(port: int, promql: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def target_health(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=10) as r:
        targets = json.load(r)["data"]["activeTargets"]
    return " ".join(f"{t['health']}:{t.get('lastError', '')}" for t in targets)


def test_prometheus_scrapes_rates_and_lag(broker_factory, prometheus):
    b, http_port = start_broker(broker_factory)
    prom = prometheus(http_port)
    topic, group = "prom-traffic", "prom-lagging"
    create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, 100, "first")
    consume_and_commit(b.bootstrap, topic, group, 100)
    wait_until(lambda: target_health(prom).startswith("up"), 30, f"the broker target up ({target_health(prom)})")

    # Produce for a few seconds so the 10 s window holds several scrapes with growth.
    n = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        produce(b.bootstrap, topic, 200, f"burst{n}")
        n += 200
        time.sleep(0.3)

    def rate():
        r = query(prom, f'rate(kafka_server_brokertopicmetrics_bytesin_total{{topic="{topic}"}}[10s])')
        return r and float(r[0]["value"][1]) > 0 and r
    wait_until(rate, 30, f"a positive bytes-in rate ({target_health(prom)})")

    def lag():
        r = query(prom, f'kafka_consumergroup_group_lag{{group="{group}",topic="{topic}",partition="0"}}')
        return r and float(r[0]["value"][1]) == n and r
    wait_until(lag, 30, f"lag {n} through Prometheus")
    summed = query(prom, f'kafka_consumergroup_group_sum_lag{{group="{group}"}}')
    assert float(summed[0]["value"][1]) == n
    # The latency histogram is usable as Prometheus' histogram_quantile expects.
    p99 = query(prom, 'histogram_quantile(0.99, sum by (le) (rate(kafka_network_requestmetrics_totaltimems_bucket{request="Produce"}[10s])))')
    assert p99 and float(p99[0]["value"][1]) > 0, p99
