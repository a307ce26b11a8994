"""The storage console in a real headless browser (Chromium through Selenium).

Guards what an operator sees on a partition page: the segment timeline of a tiered partition
with several segments, some only in remote storage and some local, drawn one element per
segment (counted against the partition directory and the remote store's objects), and the
consumer groups' lag (high watermark minus the committed offset, committed by librdkafka), each
group with its protocol and state: a classic group that committed and stopped, and a KIP-848
consumer group (`group.protocol=consumer`) whose member is still consuming.
The page must render offline (no network beyond loopback) without JavaScript; a screenshot
under the test's tmp dir proves that it did.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker import free_port
from records import ADMIN_TIMEOUT_S, create_topic

TOPIC = "console-tiered"
GROUP = "console-group"
NEW_GROUP = "console-kip848"
RECORDS = 600
COMMIT_AFTER = 150
NEW_COMMIT_AFTER = 400
SETTLE_TIMEOUT_S = 60.0

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="chromium and chromium-driver are not installed (scripts/install-test-deps.sh)",
)


def local_bases(log_dir: Path) -> set[int]:
    return {int(p.name[:-4]) for p in log_dir.glob("*.log")}


def remote_bases(remote: Path) -> set[int]:
    """Start offsets of the segment objects in the file-system remote store."""
    bases = set()
    for p in remote.rglob(f"{TOPIC}-0-*/*.log"):
        m = re.match(r"(\d{20})-", p.name)
        if m:
            bases.add(int(m.group(1)))
    return bases


def wait_settled(log_dir: Path, remote: Path, broker) -> tuple[set[int], set[int]]:
    """Waits until every sealed local segment is copied, at least one segment lives only in
    remote storage and neither tier changed for a second; returns (local, remote) bases."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    last = None
    while True:
        local, far = local_bases(log_dir), remote_bases(remote)
        sealed = local - {max(local)} if local else set()
        now = (frozenset(local), frozenset(far))
        if sealed <= far and far - local and now == last:
            return local, far
        assert time.monotonic() < deadline, f"tiers never settled: local {sorted(local)} remote {sorted(far)}\n" \
                                            f"{broker.output_tail()}"
        last = now
        time.sleep(1.0)


def read_to(c: Consumer, end: int, who: str) -> None:
    """Polls `c` until it has read offsets 0 .. end-1 of the partition, in order."""
    seen = 0
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while seen < end:
        assert time.monotonic() < deadline, f"{who} read only {seen} records"
        msg = c.poll(1.0)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        assert msg.offset() == seen
        seen += 1


def commit_part_way(bootstrap: str) -> int:
    """A group reads the first COMMIT_AFTER records (from remote storage), commits, and stops."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        read_to(c, COMMIT_AFTER, "the classic group")
        c.commit(offsets=[TopicPartition(TOPIC, 0, COMMIT_AFTER)], asynchronous=False)
        got = c.committed([TopicPartition(TOPIC, 0)], timeout=ADMIN_TIMEOUT_S)
        assert got[0].offset == COMMIT_AFTER
        _, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=ADMIN_TIMEOUT_S)
        return high
    finally:
        c.close()


def join_consumer_group(bootstrap: str) -> Consumer:
    """A KIP-848 member that reads NEW_COMMIT_AFTER records, commits, and stays in the group."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": NEW_GROUP, "group.protocol": "consumer",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    read_to(c, NEW_COMMIT_AFTER, "the consumer-protocol member")
    c.commit(offsets=[TopicPartition(TOPIC, 0, NEW_COMMIT_AFTER)], asynchronous=False)
    return c


def wait_page_shows(url: str, needle: str) -> None:
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while True:
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert resp.status == 200
            page = resp.read().decode()
        if needle in page:
            return
        assert time.monotonic() < deadline, f"the console never showed {needle!r}:\n{page}"
        time.sleep(0.5)


def chromium(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,1100", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))


def test_partition_page_draws_the_tiers_and_the_groups_lag(broker_factory, tmp_path):
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager reach out
    from selenium.webdriver.common.by import By

    remote = tmp_path / "remote"
    http_port = free_port()
    broker = broker_factory({
        "remote.log.storage.system.enable": "true",
        "strata.remote.storage.uri": f"file://{remote}",
        "remote.log.manager.task.interval.ms": "200",
        "log.retention.check.interval.ms": "200",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "offsets.topic.num.partitions": "1",
        "strata.metrics.listener": f"127.0.0.1:{http_port}",
    }).start()
    # 4 KiB segments; keep about two of them locally, so the oldest live only remotely
    # and the newest sealed ones in both tiers.
    create_topic(broker.bootstrap, TOPIC, config={
        "remote.storage.enable": "true",
        "segment.bytes": "4096",
        "retention.ms": "-1",
        "local.retention.bytes": "8192",
    })
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.size": 1024})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=f"value-{i:05d}-".encode() + b"x" * 60, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0

    local, far = wait_settled(broker.log_dir / f"{TOPIC}-0", remote, broker)
    high = commit_part_way(broker.bootstrap)
    assert high == RECORDS
    expected = sorted(local | far)
    assert len(expected) >= 4, expected

    member = join_consumer_group(broker.bootstrap)
    url = f"http://127.0.0.1:{http_port}/console/topics/{TOPIC}/0"
    # The member's commit and its group's Stable state show once its heartbeat was answered.
    wait_page_shows(url, f'data-group="{NEW_GROUP}" data-protocol="consumer" data-state="Stable"')
    driver = chromium(tmp_path / "chrome-profile")
    try:
        driver.set_page_load_timeout(30)
        driver.get(url)
        assert TOPIC in driver.title
        segments = driver.find_elements(By.CSS_SELECTOR, "svg#timeline [data-segment-base]")
        bases = sorted(int(s.get_attribute("data-segment-base")) for s in segments)
        assert bases == expected, f"drawn {bases}, on disk and remote {expected}"
        tiers = {int(s.get_attribute("data-segment-base")): s.get_attribute("data-tier") for s in segments}
        assert any(t in ("remote", "both") for t in tiers.values()), tiers
        assert "local" in tiers.values(), tiers
        for base in far - local:
            assert tiers[base] == "remote", (base, tiers)
        assert tiers[max(local)] == "local", tiers
        # Drawn, not just present: each segment's rectangle has a size on screen.
        rect = segments[0].find_element(By.TAG_NAME, "rect")
        assert rect.size["width"] > 0 and rect.size["height"] > 0, rect.size

        want_lag = high - COMMIT_AFTER
        row = driver.find_element(By.CSS_SELECTOR, f'tr.group-lag[data-group="{GROUP}"]')
        assert int(row.get_attribute("data-lag")) == want_lag
        assert int(row.find_element(By.CSS_SELECTOR, "td.lag").text) == want_lag
        marker = driver.find_element(By.CSS_SELECTOR, f'svg#timeline g[data-group="{GROUP}"]')
        assert int(marker.get_attribute("data-lag")) == want_lag
        assert int(marker.get_attribute("data-committed")) == COMMIT_AFTER
        assert (row.get_attribute("data-protocol"), row.get_attribute("data-state")) == ("classic", "Empty")
        assert row.find_element(By.CSS_SELECTOR, "td.protocol").text == "classic"

        # The KIP-848 group, its member still in it, beside the classic one.
        new = driver.find_element(By.CSS_SELECTOR, f'tr.group-lag[data-group="{NEW_GROUP}"]')
        assert (new.get_attribute("data-protocol"), new.get_attribute("data-state")) == ("consumer", "Stable")
        assert new.find_element(By.CSS_SELECTOR, "td.protocol").text == "consumer"
        assert new.find_element(By.CSS_SELECTOR, "td.state").text == "Stable"
        assert int(new.get_attribute("data-lag")) == high - NEW_COMMIT_AFTER
        assert int(new.find_element(By.CSS_SELECTOR, "td.lag").text) == high - NEW_COMMIT_AFTER

        shot = tmp_path / "console.png"
        assert driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000, shot.stat().st_size
    finally:
        driver.quit()
        member.close()
