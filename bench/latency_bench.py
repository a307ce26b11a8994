"""End-to-end latency at a fixed rate: produce time to consumer receipt, p50/p99/p99.9.

Run through scripts/bench-latency.sh. Like Kafka's EndToEndLatency tool, but at a fixed rate
rather than one record at a time. In one go it starts a release `strata serve` on a temporary
log dir and, for `strata.durable.append` off and then on (the topic config of that name on a
fresh topic per run, so the broker and its settings are the same for both):

1. **maximum**: `--producers` producer processes send 1 KiB records to a fresh topic as fast
   as they can for `--max-seconds` while a consumer process reads them; the maximum is the lower
   of the acknowledged produce rate (to the last delivery report) and the rate at which the
   consumer received records while the producers were sending (what the whole pipeline sustains
   on this machine's shared cores, not the broker alone);
2. **fixed rate** at 10%, 50% and 80% of that maximum, each on a fresh topic for `--seconds`:
   the producers together send at that rate (each its share, paced against the wall clock in
   small bursts, never ahead of schedule); each record's first 8 bytes are its send time
   (`time.time_ns()` just before `produce()`), and the consumer records receipt time minus send
   time for every record (the receipt time is taken when `poll()` returns a record; the records
   queued behind it are drained at once and share that time).
   The first `--warmup` seconds of records are not counted. The producers' achieved rate is
   reported next to the target, so a load generator that could not keep up is visible.

Where the time goes, per phase: **ack p50/p99** is each record's time from `produce()` to its
delivery report in the producer (the produce round trip as the client sees it, including
librdkafka's queue and the Python loop that serves callbacks), and **broker produce p50/p99**
is the broker's own Produce handling time over the phase — the `TotalTimeMs` histogram scraped
from the broker's `/metrics` before and after, given as the upper bound of the bucket holding
the quantile (buckets 0.25, 0.5, 1, 2.5, 5, 10 ... ms).

Producer: librdkafka (confluent-kafka), acks=1, linger.ms=0, no compression, the default
batch.size; records go to partition (record number mod `--partitions`), no keys. Consumer:
librdkafka, assign() from offset 0, fetch.min.bytes=1, fetch.wait.max.ms=500 (Kafka's
defaults: the broker answers as soon as one byte is there). All processes run on this machine,
so producers, consumer and broker share its cores. `--json FILE` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import os
import statistics
import struct
import sys
import tempfile
import time
from array import array
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

LEVELS = [0.1, 0.5, 0.8]
PRODUCER_CONFIG = {"acks": 1, "linger.ms": 0, "compression.type": "none", "max.in.flight.requests.per.connection": 5,
                   "queue.buffering.max.messages": 100_000, "queue.buffering.max.kbytes": 65_536}
CONSUMER_CONFIG = {"fetch.min.bytes": 1, "fetch.wait.max.ms": 500, "enable.auto.commit": False,
                   "group.id": "strata-latency-bench"}
STAMP = struct.Struct(">q")


def producer_main(bootstrap: str, topic: str, partitions: int, first: int, rate: float, start,
                  warmup: float, seconds: float, size: int, ready, results) -> None:
    """One load generator: `rate` records/s (0: as fast as it can) from `start` for `seconds`.
    Also records each acknowledged record's produce-to-delivery-report time after `warmup`."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    producer.list_topics(topic, timeout=10)
    tail = bytes(size - STAMP.size)
    acked, failed = 0, 0
    last_ack_ns = 0
    count_from_ns = 0
    ack_latencies = array("q")

    def on_delivery(err, msg):
        nonlocal acked, failed, last_ack_ns
        if err is None:
            acked += 1
            last_ack_ns = time.time_ns()
            sent_ns = STAMP.unpack_from(msg.value())[0]
            if sent_ns >= count_from_ns:
                ack_latencies.append(last_ack_ns - sent_ns)
        else:
            failed += 1

    ready.wait()
    ready.wait()  # the parent sets the start time between the two
    start_ns = start.value
    count_from_ns = start_ns + int(warmup * 1e9)
    while time.time_ns() < start_ns:
        time.sleep(0.0005)
    end_ns = start_ns + int(seconds * 1e9)
    sent, i = 0, first
    while True:
        now = time.time_ns()
        if now >= end_ns:
            break
        due = int((now - start_ns) * rate / 1e9) if rate else sent + 256
        while sent < due:
            try:
                producer.produce(topic, STAMP.pack(time.time_ns()) + tail, partition=i % partitions,
                                 on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.001)
                continue
            sent += 1
            i += 1
        producer.poll(0)
        if rate:
            wait = (start_ns + (sent + 1) * 1e9 / rate - time.time_ns()) / 1e9
            if wait > 0:
                time.sleep(min(wait, 0.001))
    last_send_ns = time.time_ns()
    left = producer.flush(60)
    results.put({"sent": sent, "acked": acked, "failed": failed, "left": left, "acks": ack_latencies.tobytes(),
                 "send_seconds": (last_send_ns - start_ns) / 1e9,
                 "ack_seconds": (max(last_ack_ns, start_ns) - start_ns) / 1e9})


def consumer_main(bootstrap: str, topic: str, partitions: int, start, warmup: float, seconds: float,
                  expected, ready, results) -> None:
    """Reads from offset 0 until `expected` (set once the producers are done) records arrived."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    consumer.consume(num_messages=1, timeout=0.5)  # connected and fetching before the start
    ready.wait()
    ready.wait()
    count_from_ns = start.value + int(warmup * 1e9)
    end_ns = start.value + int(seconds * 1e9)
    in_window = 0  # records received while the producers were sending
    latencies = array("q")
    got, first_ns, last_ns = 0, 0, 0
    deadline = None
    while True:
        # consume() with a timeout waits for a full batch; poll() returns the first record as
        # it arrives, and what is queued behind it is drained at once.
        first = consumer.poll(0.05)
        now = time.time_ns()
        batch = [first] + consumer.consume(num_messages=10_000, timeout=0) if first is not None else []
        for msg in batch:
            if msg.error():
                raise RuntimeError(msg.error())
            sent = STAMP.unpack_from(msg.value())[0]
            if sent >= count_from_ns:
                latencies.append(now - sent)
        if batch:
            got += len(batch)
            if now <= end_ns:
                in_window += len(batch)
            first_ns = first_ns or now
            last_ns = now
        target = expected.value
        if target >= 0:
            if got >= target:
                break
            deadline = deadline or time.monotonic() + 30
            if time.monotonic() > deadline:
                break
    consumer.close()
    lat = sorted(latencies)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] / 1e6 if lat else float("nan")

    results.put({"received": got, "in_window": in_window, "samples": len(lat), "first_ns": first_ns, "last_ns": last_ns,
                 "p50_ms": pct(0.50), "p99_ms": pct(0.99), "p999_ms": pct(0.999),
                 "max_ms": lat[-1] / 1e6 if lat else float("nan")})


def run_phase(bootstrap: str, topic: str, args, rate: float, seconds: float) -> dict:
    """One run: producers at `rate` in total (0: unthrottled) and the consumer, on `topic`."""
    ctx = mp.get_context("spawn")
    ready = ctx.Barrier(args.producers + 2)
    results = ctx.Queue()
    expected = ctx.Value("q", -1)
    start = ctx.Value("q", 0)
    consumer = ctx.Process(target=consumer_main, args=(bootstrap, topic, args.partitions, start, args.warmup,
                                                       seconds, expected, ready, results))
    consumer.start()
    producers = [ctx.Process(target=producer_main,
                             args=(bootstrap, topic, args.partitions, i, rate / args.producers, start,
                                   args.warmup, seconds, args.size, ready, results))
                 for i in range(args.producers)]
    for p in producers:
        p.start()
    ready.wait()  # every process connected
    start.value = time.time_ns() + int(0.2e9)
    start_ns = start.value
    ready.wait()
    outs = [results.get(timeout=seconds + 120) for _ in producers]
    for p in producers:
        p.join()
    sent = sum(o["sent"] for o in outs)
    expected.value = sent
    cons = results.get(timeout=120)
    consumer.join()
    if any(o["failed"] or o["left"] for o in outs) or cons["received"] != sent:
        raise RuntimeError(f"{topic}: producers {outs}, consumer received {cons['received']} of {sent}")
    send_s = max(o["send_seconds"] for o in outs)
    ack_s = max(o["ack_seconds"] for o in outs)
    acks = array("q")
    for o in outs:
        acks.frombytes(o["acks"])
    acks = sorted(acks)

    def ack_pct(q: float) -> float:
        return acks[min(len(acks) - 1, int(q * len(acks)))] / 1e6 if acks else float("nan")

    return {"topic": topic, "target_rate": round(rate), "sent": sent,
            "achieved_rate": round(sent / send_s), "acked_rate": round(sent / ack_s),
            "consumed_rate": round(cons["in_window"] / seconds),
            "ack_p50_ms": ack_pct(0.50), "ack_p99_ms": ack_pct(0.99), **cons}


BUCKET = re.compile(r'^kafka_network_requestmetrics_totaltimems_bucket\{(?P<labels>[^}]*)\} (?P<count>\S+)$')


def request_time_buckets(metrics_url: str) -> dict[tuple[str, float], float]:
    """The broker's TotalTimeMs histogram (cumulative counts) by (request, le)."""
    import urllib.request

    with urllib.request.urlopen(metrics_url, timeout=10) as r:
        text = r.read().decode()
    out: dict[tuple[str, float], float] = {}
    for line in text.splitlines():
        m = BUCKET.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        le = float("inf") if labels.get("le") == "+Inf" else float(labels.get("le", "nan"))
        key = (labels.get("request", ""), le)
        out[key] = out.get(key, 0.0) + float(m["count"])
    return out


def request_time_quantile(before: dict, after: dict, request: str, q: float) -> tuple[float, int]:
    """The upper bound (ms) of the histogram bucket holding quantile `q` of `request`'s total
    time between two scrapes, and the number of requests in between."""
    bounds = sorted(le for (r, le) in after if r == request)
    counts = [after.get((request, le), 0.0) - before.get((request, le), 0.0) for le in bounds]
    total = counts[-1] if counts else 0.0
    for le, c in zip(bounds, counts):
        if total and c >= q * total:
            return le, int(total)
    return float("nan"), int(total)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--producers", type=int, default=1, help="producer processes")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of each topic")
    parser.add_argument("--size", type=int, default=1024, help="record size in bytes")
    parser.add_argument("--max-seconds", type=float, default=4.0, help="length of the maximum-throughput run")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of each fixed-rate run")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of records not counted")
    parser.add_argument("--levels", type=float, nargs="+", default=LEVELS, help="fractions of the maximum")
    parser.add_argument("--rates", type=int, nargs="+",
                        help="fixed rates in records/s instead of the maximum and its fractions (to compare "
                             "builds at the same load)")
    parser.add_argument("--modes", nargs="+", default=["off", "on"], choices=["off", "on"],
                        help="strata.durable.append values to run")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    from broker import StrataBroker
    from confluent_kafka.admin import AdminClient, NewTopic

    rows = []
    with tempfile.TemporaryDirectory(prefix="strata-latency-bench-", dir=os.environ.get("STRATA_BENCH_DIR")) as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        from broker import free_port

        metrics_port = free_port()
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out",
                              {"strata.metrics.listener": f"127.0.0.1:{metrics_port}"})
        broker.start()

        def measured(topic: str, rate: float, seconds: float) -> dict:
            """run_phase, plus the broker's own Produce time (TotalTimeMs) over the phase."""
            before = request_time_buckets(metrics_url)
            r = run_phase(broker.bootstrap, topic, args, rate, seconds)
            after = request_time_buckets(metrics_url)
            p50, n = request_time_quantile(before, after, "Produce", 0.50)
            p99, _ = request_time_quantile(before, after, "Produce", 0.99)
            _, fetches = request_time_quantile(before, after, "Fetch", 0.5)
            return {**r, "broker_produce_p50_ms": p50, "broker_produce_p99_ms": p99, "produce_requests": n,
                    "fetch_requests": fetches}
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        n = 0

        def fresh_topic(durable: str) -> str:
            nonlocal n
            n += 1
            name = f"latency-{durable}-{n}"
            admin.create_topics([NewTopic(name, num_partitions=args.partitions, replication_factor=1,
                                          config={"strata.durable.append": "true" if durable == "on" else "false"})
                                 ])[name].result(timeout=30)
            return name

        try:
            for mode in args.modes:
                for rate in args.rates or []:
                    load = Path("/proc/loadavg").read_text().split()[0]
                    r = measured(fresh_topic(mode), rate, args.seconds)
                    rows.append({"durable": mode, "level": "fixed", "load_average": load, **r})
                    print(f"durable={mode} fixed {rate:,} rec/s: achieved {r['achieved_rate']:,}  p50 "
                          f"{r['p50_ms']:.2f}  p99 {r['p99_ms']:.2f} ms  (load {load})", flush=True)
                if args.rates:
                    continue
                load = Path("/proc/loadavg").read_text().split()[0]
                top = measured(fresh_topic(mode), 0, args.max_seconds)
                maximum = min(top["acked_rate"], top["consumed_rate"])
                row = {"durable": mode, "level": "max", "load_average": load, **top, "rate": maximum}
                rows.append(row)
                print(f"durable={mode} maximum {maximum:,} rec/s (acked {top['acked_rate']:,}, consumed "
                      f"{top['consumed_rate']:,}) p50 {top['p50_ms']:.1f} ms p99 {top['p99_ms']:.1f} ms "
                      f"load {load}", flush=True)
                for level in args.levels:
                    load = Path("/proc/loadavg").read_text().split()[0]
                    r = measured(fresh_topic(mode), maximum * level, args.seconds)
                    rows.append({"durable": mode, "level": level, "load_average": load, **r})
                    print(f"durable={mode} {level:4.0%} target {r['target_rate']:>8,} achieved "
                          f"{r['achieved_rate']:>8,} rec/s  p50 {r['p50_ms']:7.2f}  p99 {r['p99_ms']:7.2f}  "
                          f"p99.9 {r['p999_ms']:7.2f}  max {r['max_ms']:7.2f} ms  ({r['samples']:,} samples, "
                          f"load {load})", flush=True)
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            if broker.running():
                broker.stop()

    print(f"\nend-to-end latency, {args.size} B records, {args.producers} producer process(es), "
          f"{args.partitions} partition(s), acks=1, linger.ms=0")
    print(f"{'durable':<8} {'load':>5} {'target rec/s':>13} {'achieved':>9} {'MB/s':>6} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'p99.9 ms':>8} {'max ms':>7} {'load avg':>8} "
          f"{'ack p50':>7} {'ack p99':>7} {'broker produce p50/p99 ≤ ms':>27}")
    for r in rows:
        level = r["level"] if r["level"] in ("max", "fixed") else f"{r['level']:.0%}"
        rate = r["rate"] if r["level"] == "max" else r["target_rate"]
        achieved = r["achieved_rate"]
        print(f"{r['durable']:<8} {level:>5} {rate:>13,} {achieved:>9,} {rate * args.size / 1e6:>6.1f} "
              f"{r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['p999_ms']:>8.2f} {r['max_ms']:>7.2f} "
              f"{r['load_average']:>8} {r['ack_p50_ms']:>7.2f} {r['ack_p99_ms']:>7.2f} "
              f"{r['broker_produce_p50_ms']:>13g} / {r['broker_produce_p99_ms']:<11g}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
