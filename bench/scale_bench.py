"""Throughput across partitions: librdkafka produce and consume over 1, 10, 100 and 1,000 partitions.

Run through scripts/bench-scale.sh. In one go it starts a release `strata serve` on a temporary
log dir (default settings: page-cache durability), then per round and per partition count P
(1, 10, 100, 1000; the order rotates between rounds) it creates a fresh topic of P partitions and

- **produce**: sends the same total bytes whatever P (`--count` x `--size` B, default 200,000 x
  1 KiB) from one librdkafka producer (confluent-kafka): acks=1, no compression, linger.ms=50,
  batch.size=1000000, no keys; the harness names the partition of record i as i mod P (round
  robin), so the sticky partitioner plays no part and every partition gets count/P records;
- **consume**: one consumer assigned all P partitions from offset 0 reads them back; every
  partition must return exactly count/P records of the expected size.

Each figure is printed with its ratio to the 1-partition figure of the same round (medians over
`--rounds`), with the broker's CPU seconds (utime + stime from /proc) per phase, which is where
the per-partition cost on the broker shows. `--json FILE` also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from broker import StrataBroker  # noqa: E402

MB = 1_000_000
PARTITION_COUNTS = [1, 10, 100, 1000]
PRODUCER_CONFIG = {
    "acks": 1, "compression.type": "none", "linger.ms": 50, "batch.size": 1_000_000,
    "batch.num.messages": 1_000_000, "queue.buffering.max.messages": 2_000_000,
    "queue.buffering.max.kbytes": 2_000_000,
}


def broker_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """This process's CPU time, librdkafka's threads included (the client's share of the cores)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if meta is not None and meta.error is None and len(meta.partitions) == partitions \
                and all(p.leader >= 0 for p in meta.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{topic}: {partitions} partitions not ready within 60 s")


def warm_up(bootstrap: str, topic: str, partitions: int, size: int) -> float:
    """One acknowledged record in every partition, so the timed run starts on logs that exist
    (creating thousands of partitions is start-up work, measured separately from throughput)."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, "linger.ms": 5})
    failures = []
    start = time.perf_counter()
    for p in range(partitions):
        producer.produce(topic, bytes(size), partition=p,
                         on_delivery=lambda err, _msg: err is not None and failures.append(err))
    if producer.flush(300) != 0 or failures:
        raise RuntimeError(f"{topic}: warm-up failed: {failures[:3]}")
    return time.perf_counter() - start


def produce(bootstrap: str, topic: str, partitions: int, count: int, size: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    payload = (bytes(range(256)) * (size // 256 + 1))[:size]
    failures = 0

    def on_delivery(err, _msg):
        nonlocal failures
        if err is not None:
            failures += 1

    producer.list_topics(topic, timeout=10)  # metadata before the clock starts
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(300) != 0:
        raise RuntimeError(f"{topic}: records left unsent")
    seconds = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{topic}: {failures} deliveries failed")
    return seconds


def consume(bootstrap: str, topic: str, partitions: int, count: int, size: int) -> float:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "strata-scale-bench", "enable.auto.commit": False,
        "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 8_388_608,
        "queued.max.messages.kbytes": 262_144,
    })
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    per_partition = [0] * partitions
    count += partitions  # the warm-up records
    got, total_bytes = 0, 0
    start = time.perf_counter()
    deadline = start + 300
    while got < count:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{topic}: consumed {got} of {count}")
        for msg in consumer.consume(num_messages=100_000, timeout=1.0):
            if msg.error():
                raise KafkaException(msg.error())
            got += 1
            per_partition[msg.partition()] += 1
            total_bytes += len(msg.value())
    seconds = time.perf_counter() - start
    consumer.close()
    timed = count - partitions
    expected = [1 + timed // partitions + (1 if p < timed % partitions else 0) for p in range(partitions)]
    if per_partition != expected or total_bytes != count * size:
        wrong = [p for p in range(partitions) if per_partition[p] != expected[p]]
        raise RuntimeError(f"{topic}: {total_bytes} bytes; partitions with a wrong count: {wrong[:10]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument("--count", type=int, default=200_000, help="records per run")
    parser.add_argument("--size", type=int, default=1024, help="record value size in bytes")
    parser.add_argument("--partitions", type=int, nargs="+", default=PARTITION_COUNTS,
                        help="partition counts; the first is the baseline")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    counts = args.partitions
    runs: dict[tuple[str, int], list[dict]] = {}
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="strata-scale-bench-", dir=os.environ.get("STRATA_BENCH_DIR")) as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out", {})
        broker.STOP_TIMEOUT_S = 300  # closes every partition it made (thousands) on the way out
        broker.start()
        try:
            pid = broker.process.pid
            for r in range(args.rounds):
                order = counts[r % len(counts):] + counts[:r % len(counts)]
                for p in order:
                    topic = f"scale-{p}-r{r}"
                    ready = time.perf_counter()
                    create_topic(broker.bootstrap, topic, p)
                    ready = time.perf_counter() - ready
                    warm = warm_up(broker.bootstrap, topic, p, args.size)
                    print(f"round {r} create  {p:>5} partitions {ready:7.2f} s, one record in each {warm:.2f} s",
                          flush=True)
                    os.sync()
                    for phase, fn in (("produce", produce), ("consume", consume)):
                        cpu, client_cpu = broker_cpu_seconds(pid), own_cpu_seconds()
                        seconds = fn(broker.bootstrap, topic, p, args.count, args.size)
                        cpu = broker_cpu_seconds(pid) - cpu
                        client_cpu = own_cpu_seconds() - client_cpu
                        run = {"round": r, "phase": phase, "partitions": p, "seconds": round(seconds, 3),
                               "records_per_s": round(args.count / seconds),
                               "mb_per_s": round(args.count * args.size / MB / seconds, 1),
                               "broker_cpu_s": round(cpu, 2), "client_cpu_s": round(client_cpu, 2)}
                        runs.setdefault((phase, p), []).append(run)
                        print(f"round {r} {phase:<8} {p:>5} partitions {seconds:7.2f} s "
                              f"{run['mb_per_s']:8.1f} MB/s  broker CPU {cpu:5.2f} s  client CPU {client_cpu:5.2f} s", flush=True)
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            if broker.running():
                broker.stop()
    load_after = load_average()

    table = []
    print(f"\n{args.count} x {args.size} B per run, medians of {args.rounds} rounds; "
          f"load average {load_before} -> {load_after}")
    print(f"{'phase':<8} {'partitions':>10} {'rec/s':>10} {'MB/s':>8} {'ratio':>6} {'rounds':>16} {'broker CPU s':>12} {'client CPU s':>12}")
    for phase in ("produce", "consume"):
        base = runs[(phase, counts[0])]
        for p in counts:
            rs = runs[(phase, p)]
            # Each round's ratio to the baseline of the same round.
            ratios = [x["mb_per_s"] / b["mb_per_s"] for x, b in zip(rs, base)]
            row = {"phase": phase, "partitions": p,
                   "records_per_s": round(statistics.median(x["records_per_s"] for x in rs)),
                   "mb_per_s": round(statistics.median(x["mb_per_s"] for x in rs), 1),
                   "ratio": round(statistics.median(ratios), 3),
                   "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
                   "broker_cpu_s": round(statistics.median(x["broker_cpu_s"] for x in rs), 2),
                   "client_cpu_s": round(statistics.median(x["client_cpu_s"] for x in rs), 2)}
            table.append(row)
            print(f"{phase:<8} {p:>10} {row['records_per_s']:>10,} {row['mb_per_s']:>8.1f} {row['ratio']:>6.2f} "
                  f"{row['ratio_min']:>7.2f} - {row['ratio_max']:<6.2f} {row['broker_cpu_s']:>12.2f} "
                  f"{row['client_cpu_s']:>12.2f}")
    if args.json:
        args.json.write_text(json.dumps({"count": args.count, "size": args.size, "rounds": args.rounds,
                                         "load_average": [load_before, load_after], "table": table,
                                         "runs": [x for rs in runs.values() for x in rs]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
