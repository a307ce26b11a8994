"""Broker throughput benchmark: librdkafka produce and consume, then raw Fetch vs a loopback copy.

Run through scripts/bench-broker.sh. In one go it starts a release `strata serve` on a temporary
log dir, produces 1,000,000 x 100 B and 200,000 x 1 KiB records (acks=1, no compression,
linger.ms=50, 1 MiB batches), consumes them all with librdkafka, fetches the same partitions with
a minimal Fetch loop (rawfetch.py) and copies the same segment bytes over a plain loopback socket
(loopback.py). Speed is reported as records/s and MB/s, and the raw fetch as a fraction of the
loopback copy measured in the same run (ratios to a baseline, not absolute times).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from broker import StrataBroker  # noqa: E402
import loopback  # noqa: E402
import rawfetch  # noqa: E402

MB = 1_000_000


@dataclass
class Workload:
    topic: str
    count: int
    size: int


WORKLOADS = [Workload("bench-100b", 1_000_000, 100), Workload("bench-1kib", 200_000, 1024)]


def create_topic(bootstrap: str, topic: str) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})
    client.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)


def produce(bootstrap: str, w: Workload) -> float:
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": 1, "compression.type": "none", "linger.ms": 50,
        "batch.size": 1_000_000, "batch.num.messages": 1_000_000, "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_000_000,
    })
    payload = bytes(range(256)) * (w.size // 256 + 1)
    payload = payload[:w.size]
    failures = 0

    def on_delivery(err, _msg):
        nonlocal failures
        if err is not None:
            failures += 1

    start = time.perf_counter()
    for _ in range(w.count):
        while True:
            try:
                producer.produce(w.topic, payload, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(300) != 0:
        raise RuntimeError(f"{w.topic}: records left unsent")
    seconds = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{w.topic}: {failures} deliveries failed")
    return seconds


def consume(bootstrap: str, w: Workload) -> float:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "strata-bench", "enable.auto.commit": False,
        "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 8_388_608,
        "queued.max.messages.kbytes": 262_144,
    })
    consumer.assign([TopicPartition(w.topic, 0, 0)])
    got, total_bytes = 0, 0
    start = time.perf_counter()
    deadline = start + 300
    while got < w.count:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{w.topic}: consumed {got} of {w.count}")
        for msg in consumer.consume(num_messages=100_000, timeout=1.0):
            if msg.error():
                raise KafkaException(msg.error())
            got += 1
            total_bytes += len(msg.value())
    seconds = time.perf_counter() - start
    consumer.close()
    if total_bytes != w.count * w.size:
        raise RuntimeError(f"{w.topic}: consumed {total_bytes} bytes, expected {w.count * w.size}")
    return seconds


def line(name: str, records: int, payload_bytes: int, seconds: float) -> dict:
    result = {"run": name, "records": records, "seconds": round(seconds, 3),
              "records_per_s": round(records / seconds), "mb_per_s": round(payload_bytes / MB / seconds, 1)}
    print(f"{name:<28} {records:>9} records {seconds:8.2f} s {result['records_per_s']:>10,} rec/s "
          f"{result['mb_per_s']:>8.1f} MB/s", flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--repeat", type=int, default=3, help="raw-fetch and loopback repetitions")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    results = []
    with tempfile.TemporaryDirectory(prefix="strata-bench-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out", {})
        broker.start()
        try:
            for w in WORKLOADS:
                create_topic(broker.bootstrap, w.topic)
            for w in WORKLOADS:
                seconds = produce(broker.bootstrap, w)
                results.append(line(f"produce {w.size} B (librdkafka)", w.count, w.count * w.size, seconds))
            for w in WORKLOADS:
                seconds = consume(broker.bootstrap, w)
                results.append(line(f"consume {w.size} B (librdkafka)", w.count, w.count * w.size, seconds))

            fetch_rates, copy_rates = [], []
            segment_files = []
            for w in WORKLOADS:
                segment_files += sorted((broker.log_dir / f"{w.topic}-0").glob("*.log"))
            for _ in range(args.repeat):
                received, seconds = 0, 0.0
                for w in WORKLOADS:
                    r = rawfetch.fetch_all("127.0.0.1", broker.port, w.topic, 0, w.count)
                    if r.next_offset != w.count:
                        raise RuntimeError(f"{w.topic}: raw fetch ended at {r.next_offset}, expected {w.count}")
                    received += r.bytes_received
                    seconds += r.seconds
                fetch_rates.append(received / MB / seconds)
                copied, copy_seconds = loopback.copy_files(segment_files)
                copy_rates.append(copied / MB / copy_seconds)
            fetch_mb_s, copy_mb_s = statistics.median(fetch_rates), statistics.median(copy_rates)
            print(f"{'raw fetch (both topics)':<28} {received / MB:9.1f} MB      median {fetch_mb_s:8.1f} MB/s "
                  f"of {args.repeat} runs", flush=True)
            print(f"{'loopback copy (same bytes)':<28} {copied / MB:9.1f} MB      median {copy_mb_s:8.1f} MB/s "
                  f"of {args.repeat} runs", flush=True)
            print(f"raw fetch / loopback copy: {fetch_mb_s / copy_mb_s:.2f}", flush=True)
            results.append({"run": "raw fetch", "mb_per_s": round(fetch_mb_s, 1), "runs": fetch_rates})
            results.append({"run": "loopback copy", "mb_per_s": round(copy_mb_s, 1), "runs": copy_rates})
            results.append({"run": "raw fetch / loopback", "ratio": round(fetch_mb_s / copy_mb_s, 3)})
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            if broker.running():
                broker.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
