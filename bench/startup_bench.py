"""Start-up and many-partitions benchmark (issue 19): how start-up time, RSS and open files grow.

Run through scripts/bench-startup.sh. For 100, 1,000 and 10,000 partitions, in one go:

1. start `strata serve` on a fresh log dir; CreateTopics (confluent-kafka AdminClient) one topic
   with that many partitions; librdkafka writes 3 x 100 B records to every partition;
2. stop it cleanly (SIGTERM), restart it and time **ready**: from spawn until a Metadata request
   lists every partition with a leader and a produce (acks=1) to the last partition is
   acknowledged; then the **idle RSS** (`VmRSS` of `/proc/<pid>/status`, after 2 s idle) and the
   **open descriptors** (`/proc/<pid>/fd`, split into segment/index files and others);
3. the same after SIGKILL (an unclean shutdown: recovery from the recovery point);
4. baselines in the same run: the time to walk and `stat` every file of the same data dir
   (what any start-up must at least do with Strata's layout), and the broker's RSS and
   descriptors with no partition at all.

Prints one table; `--json FILE` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from broker import StrataBroker  # noqa: E402

TOPIC = "many"
RECORDS_PER_PARTITION = 3


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_files(pid: int) -> tuple[int, int]:
    """(segment and index files, all descriptors)."""
    seg = total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        total += 1
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.endswith((".log", ".index", ".timeindex", ".txnindex")):
            seg += 1
    return seg, total


def maps(pid: int) -> int:
    """Mapped index files (`vm.max_map_count` is what Kafka's many mapped indexes exhaust)."""
    n = 0
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        if line.endswith((".index", ".timeindex")):
            n += 1
    return n


def create_and_fill(bootstrap: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # Creating 10,000 partitions takes longer than librdkafka's default 60 s request timeout.
    admin.create_topics([NewTopic(TOPIC, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=600, request_timeout=600)[TOPIC].result(timeout=660)
    wait_metadata(admin, partitions, time.monotonic() + 120)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 20,
                         "queue.buffering.max.messages": 1_000_000})
    failures = []
    for i in range(RECORDS_PER_PARTITION):
        for p in range(partitions):
            while True:
                try:
                    producer.produce(TOPIC, b"v" * 100, partition=p,
                                     on_delivery=lambda e, _m: e and failures.append(e))
                    break
                except BufferError:
                    producer.poll(0.01)
    if producer.flush(180) != 0 or failures:
        raise RuntimeError(f"fill failed: {failures[:3]}")


def wait_metadata(admin: AdminClient, partitions: int, deadline: float) -> None:
    while True:
        try:
            meta = admin.list_topics(topic=TOPIC, timeout=5)
            t = meta.topics.get(TOPIC)
            if t is not None and t.error is None and len(t.partitions) == partitions \
                    and all(p.leader >= 0 for p in t.partitions.values()):
                return
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("metadata not ready")
        time.sleep(0.02)


def time_to_ready(broker: StrataBroker, partitions: int) -> float:
    """Seconds from spawn until Metadata lists every partition and a produce to the last one
    is acknowledged."""
    start = time.monotonic()
    broker.spawn()
    deadline = start + 600
    # log_level 0: "connection refused" until the broker listens is expected, not news.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "reconnect.backoff.ms": 10,
                         "reconnect.backoff.max.ms": 20, "log_level": 0})
    wait_metadata(admin, partitions, deadline)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": 1, "linger.ms": 0,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 20,
                         "retry.backoff.ms": 10, "log_level": 0})
    done: list = []
    producer.produce(TOPIC, b"ready?", partition=partitions - 1,
                     on_delivery=lambda e, m: done.append(e))
    while not done and time.monotonic() < deadline:
        producer.poll(0.005)
    if not done or done[0] is not None:
        raise RuntimeError(f"produce to the last partition failed: {done}")
    return time.monotonic() - start


def walk_and_stat(root: Path) -> tuple[float, int]:
    start = time.monotonic()
    n = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            os.stat(os.path.join(dirpath, f))
            n += 1
    return time.monotonic() - start, n


def measure(pid: int) -> dict:
    time.sleep(2)
    seg, total = open_files(pid)
    return {"rss_mib": round(rss_mib(pid), 1), "segment_fds": seg, "all_fds": total,
            "index_maps": maps(pid)}


def run(strata: Path, partitions: int, overrides: dict, work: Path) -> dict:
    data = work / f"data-{partitions}"
    out = work / f"out-{partitions}"
    out.mkdir()
    broker = StrataBroker(strata, data, out, overrides, keep_port=True)
    # A clean stop flushes (fsyncs) every partition: minutes for 10,000 on a slow disk.
    broker.STOP_TIMEOUT_S = 1800
    try:
        return run_on(broker, partitions, data)
    finally:
        broker.kill()


def run_on(broker: StrataBroker, partitions: int, data: Path) -> dict:
    broker.start()
    t0 = time.monotonic()
    create_and_fill(broker.bootstrap, partitions)
    fill_s = time.monotonic() - t0
    filled = measure(broker.process.pid)
    t0 = time.monotonic()
    broker.stop()
    stop_s = time.monotonic() - t0
    walk_s, files = walk_and_stat(data)
    clean_s = time_to_ready(broker, partitions)
    clean = measure(broker.process.pid)
    broker.kill()
    kill_s = time_to_ready(broker, partitions)
    killed = measure(broker.process.pid)
    broker.stop()
    return {"partitions": partitions, "files": files, "fill_s": round(fill_s, 2),
            "walk_stat_s": round(walk_s, 3), "after_fill": filled, "clean_stop_s": round(stop_s, 2),
            "clean_ready_s": round(clean_s, 2), "clean": clean,
            "sigkill_ready_s": round(kill_s, 2), "sigkill": killed}


def empty_broker(strata: Path, overrides: dict, work: Path) -> dict:
    out = work / "out-empty"
    out.mkdir()
    broker = StrataBroker(strata, work / "data-empty", out, overrides)
    try:
        start = time.monotonic()
        broker.start()
        ready = time.monotonic() - start
        m = measure(broker.process.pid)
        broker.stop()
    finally:
        broker.kill()
    return {"ready_s": round(ready, 2), **m}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", type=Path, required=True)
    ap.add_argument("--partitions", type=int, nargs="*", default=[100, 1000, 10000])
    ap.add_argument("--override", action="append", default=[], help="key=value for the broker")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    overrides = {"strata.max.partitions": "100000", "num.partitions": "1"}
    for kv in args.override:
        k, v = kv.split("=", 1)
        overrides[k] = v
    with tempfile.TemporaryDirectory(prefix="strata-startup-") as tmp:
        work = Path(tmp)
        base = empty_broker(args.strata, overrides, work)
        rows = []
        for n in args.partitions:
            rows.append(run(args.strata, n, overrides, work))
            print(json.dumps(rows[-1]), flush=True)
    load = os.getloadavg()[0]
    print(f"Baseline: empty broker ready in {base['ready_s']} s, RSS {base['rss_mib']} MiB, "
          f"{base['all_fds']} descriptors; load average {load:.2f}")
    head = ("partitions", "files", "walk+stat s", "clean stop s", "clean ready s", "RSS MiB", "seg fds", "all fds",
            "idx maps", "SIGKILL ready s", "RSS MiB", "seg fds")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for r in rows:
        c, k = r["clean"], r["sigkill"]
        print(" | ".join(str(x) for x in (
            r["partitions"], r["files"], r["walk_stat_s"], r["clean_stop_s"], r["clean_ready_s"], c["rss_mib"],
            c["segment_fds"], c["all_fds"], c["index_maps"], r["sigkill_ready_s"], k["rss_mib"],
            k["segment_fds"])))
    if args.json:
        args.json.write_text(json.dumps({"baseline": base, "load_average": load, "rows": rows},
                                        indent=2))


if __name__ == "__main__":
    main()
