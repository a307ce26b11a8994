"""kcat (librdkafka's CLI): metadata listing, producing a file with keys, consuming to the end.

Guards the path operators use first: `kcat -L`, `kcat -P -l file -K:` and
`kcat -C -e -o beginning` against an auto-created topic.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
TIMEOUT_S = 60


def kcat(*args: str, input_text: str | None = None) -> str:
    if KCAT is None:
        pytest.fail("kcat not found: run scripts/install-test-deps.sh")
    proc = subprocess.run([KCAT, *args], capture_output=True, text=True, timeout=TIMEOUT_S, input=input_text)
    assert proc.returncode == 0, f"kcat {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_metadata_listing_shows_the_broker_and_topics(broker):
    from records import create_topic

    create_topic(broker.bootstrap, "listed", partitions=3)
    meta = json.loads(kcat("-b", broker.bootstrap, "-L", "-J", "-m", "30"))
    assert [(b["name"].rsplit(":", 1)[-1]) for b in meta["brokers"]] == [str(broker.port)]
    topics = {t["topic"]: t for t in meta["topics"]}
    assert "listed" in topics, f"topics listed: {sorted(topics)}"
    partitions = sorted(topics["listed"]["partitions"], key=lambda p: p["partition"])
    assert [p["partition"] for p in partitions] == [0, 1, 2]
    broker_ids = {b["id"] for b in meta["brokers"]}
    for p in partitions:
        assert p["leader"] in broker_ids
        assert [r["id"] for r in p["replicas"]] == [p["leader"]]
        assert [r["id"] for r in p["isrs"]] == [p["leader"]]

    # The plain-text listing is what people read; it must name the topic and its partitions too.
    text = kcat("-b", broker.bootstrap, "-L", "-t", "listed", "-m", "30")
    assert 'topic "listed" with 3 partitions' in text


def test_produce_file_with_keys_then_consume_to_end(broker, tmp_path):
    count = 500
    lines = [f"k{i}:v{i}-{'p' * (i % 7)}" for i in range(count)]
    data = tmp_path / "records.txt"
    data.write_text("\n".join(lines) + "\n")

    before_ms = int(time.time() * 1000)
    kcat("-b", broker.bootstrap, "-P", "-t", "files", "-p", "0", "-K", ":", "-H", "origin=kcat",
         "-X", "topic.metadata.refresh.interval.ms=100", "-l", str(data))
    after_ms = int(time.time() * 1000)

    out = kcat("-b", broker.bootstrap, "-C", "-t", "files", "-p", "0", "-e", "-o", "beginning",
               "-f", "%k %s %o %T %h\\n")
    got = out.splitlines()
    assert len(got) == count, f"consumed {len(got)} of {count} records:\n{out[-2000:]}"
    last_ts = 0
    for i, line in enumerate(got):
        key, value, offset, ts, headers = line.split(" ")
        expected_key, expected_value = lines[i].split(":", 1)
        assert (key, value, int(offset), headers) == (expected_key, expected_value, i, "origin=kcat"), line
        # librdkafka stamps CreateTime when kcat hands it the line: inside the produce window, never decreasing.
        assert before_ms <= int(ts) <= after_ms, f"timestamp {ts} outside [{before_ms}, {after_ms}]"
        assert int(ts) >= last_ts
        last_ts = int(ts)
