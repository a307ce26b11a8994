"""Three-broker cluster vs one broker: produce and consume throughput, measured in the same run.

Run through scripts/bench-cluster.sh. It starts one etcd on free loopback ports with a temporary
data dir, three cluster brokers (node.id 1..3, each with its own log dir, metadata in that etcd)
and, separately, one single-node broker (no etcd). Both setups stay up for the whole run; each
round runs the same workload on each setup, the setups' order alternating between rounds after an
fsync of everything dirty, so machine noise and order effects fall on both alike:

- produce: COUNT x SIZE B records to a fresh 6-partition topic (replication factor 1) from one
  librdkafka producer (bench/broker_bench.py's settings: acks=1, linger.ms=50, 1 MiB batches, no
  compression), the partitions taken in turn so each gets COUNT / 6;
- consume: one librdkafka consumer assigned all 6 partitions from offset 0 reads them all back,
  checking that each partition returns exactly the records produced to it, at offsets 0, 1, 2...;
- produce x3: the same COUNT records split over PRODUCERS processes (multiprocessing) producing in
  parallel to another fresh 6-partition topic, timed from the first process's first record to the
  last one's flush; each partition's high watermark is then checked against the acknowledged
  records.

On the cluster, every topic's leaders are read from Metadata before the run and must cover all
three brokers. Reported per setup and phase: the median records/s and MB/s (payload bytes, 10^6)
over the rounds, the brokers' CPU seconds (utime + stime from /proc, summed over the setup's
brokers) and the ratio cluster / single for each phase (of the medians, and the range of each
round's own ratio, which shows how much machine noise moves the comparison). At the end the brokers' and etcd's WARN
and ERROR log lines are listed with their counts.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from broker import StrataBroker, free_port  # noqa: E402

MB = 1_000_000
PARTITIONS = 6
BROKERS = 3
READY_TIMEOUT_S = 60.0
SETUPS = ("single", "cluster")


# --- etcd -----------------------------------------------------------------------------------------

class Etcd:
    """One etcd member on free loopback ports with its own data dir (etcd's default timings)."""

    def __init__(self, data_dir: Path, output: Path):
        self.data_dir = data_dir
        self.output = output
        self.client_port = free_port()
        self.peer_port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def start(self) -> "Etcd":
        binary = os.environ.get("STRATA_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
        peer = f"http://127.0.0.1:{self.peer_port}"
        cmd = [binary, "--name", "bench", "--data-dir", str(self.data_dir),
               "--listen-client-urls", self.endpoint, "--advertise-client-urls", self.endpoint,
               "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
               "--initial-cluster", f"bench={peer}", "--logger", "zap", "--log-outputs", "stderr"]
        with open(self.output, "wb") as out:
            self.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"etcd exited with code {self.process.returncode}:\n{self.output.read_text()}")
            try:  # /health answers true once the member has a leader and can commit
                with urllib.request.urlopen(f"{self.endpoint}/health", timeout=1) as r:
                    if json.loads(r.read()).get("health") == "true":
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"etcd not healthy within {READY_TIMEOUT_S}s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --- the setups -----------------------------------------------------------------------------------

@dataclass
class Setup:
    name: str
    brokers: list[StrataBroker]
    leaders: dict[str, list[int]] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(b.process.pid) for b in self.brokers)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_cluster(bootstrap: str) -> None:
    """Until Metadata lists every broker and a controller."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + READY_TIMEOUT_S
    seen = None
    while time.monotonic() < deadline:
        try:
            md = client.list_topics(timeout=5)
            seen = (sorted(md.brokers), md.controller_id)
            if len(md.brokers) == BROKERS and md.controller_id != -1:
                return
        except KafkaException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"cluster not formed within {READY_TIMEOUT_S}s (brokers, controller: {seen})")


def check_cluster(setup: Setup, topics: list[str]) -> None:
    """Before a timed run: every broker still registered and every partition still led by the
    broker that led it at creation (a broker whose lease lapsed would fail the run slowly)."""
    md = AdminClient({"bootstrap.servers": setup.bootstrap}).list_topics(timeout=10)
    if len(md.brokers) != len(setup.brokers):
        raise RuntimeError(f"{setup.name}: Metadata lists brokers {sorted(md.brokers)}, expected {len(setup.brokers)}")
    for topic in topics:
        t = md.topics.get(topic)
        leaders = [t.partitions[p].leader for p in range(PARTITIONS)] if t and not t.error else None
        if leaders != setup.leaders[topic]:
            raise RuntimeError(f"{setup.name}: {topic} partition leaders {leaders}, at creation {setup.leaders[topic]}")


def partition_leaders(bootstrap: str, topic: str) -> list[int] | None:
    """Each partition's leader as this bootstrap broker reports it, or None while incomplete.
    A fresh client knows only its bootstrap broker, so this asks that broker."""
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=5)
    except KafkaException:  # a broker busy applying the new topics; asked again
        return None
    t = md.topics.get(topic)
    if t is None or t.error is not None or len(t.partitions) != PARTITIONS:
        return None
    leaders = [t.partitions[p].leader for p in range(PARTITIONS)]
    return None if -1 in leaders else leaders


def create_topics(setup: Setup, topics: list[str]) -> None:
    """Creates the topics and waits until every broker reports a leader for each partition; on the
    cluster the leaders must cover every broker."""
    client = AdminClient({"bootstrap.servers": setup.bootstrap})
    futures = client.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in topics])
    for f in futures.values():
        f.result(timeout=60)
    for topic in topics:
        for broker in setup.brokers:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while (leaders := partition_leaders(broker.bootstrap, topic)) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{setup.name}: {topic} has no leader for some partition on {broker.bootstrap}")
                time.sleep(0.1)
        setup.leaders[topic] = leaders
        if setup.name == "cluster" and len(set(leaders)) != BROKERS:
            raise RuntimeError(f"{topic}: partition leaders {leaders} do not cover all {BROKERS} brokers")


# --- the workload ---------------------------------------------------------------------------------

PRODUCER_CONFIG = {
    "acks": 1, "compression.type": "none", "linger.ms": 50, "batch.size": 1_000_000,
    "batch.num.messages": 1_000_000, "queue.buffering.max.messages": 2_000_000,
    "queue.buffering.max.kbytes": 2_000_000,
    # A partition whose leader has gone fails its records after a minute, not librdkafka's five.
    "message.timeout.ms": 60_000,
}


def produce_records(bootstrap: str, topic: str, count: int, size: int, first: int) -> dict:
    """Produces COUNT records, partitions in turn starting at FIRST; returns the start and end
    (perf_counter, one clock for every process on the machine) and the acknowledged records per
    partition."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    payload = (bytes(range(256)) * (size // 256 + 1))[:size]
    acked = [0] * PARTITIONS
    failed = [0] * PARTITIONS
    failures: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            failed[msg.partition()] += 1
            if len(failures) < 3:
                failures.append(str(err))
        else:
            acked[msg.partition()] += 1

    start = time.perf_counter()
    for i in range(count):
        partition = (first + i) % PARTITIONS
        while True:
            try:
                producer.produce(topic, payload, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(300)
    end = time.perf_counter()
    if left:
        failures.append(f"{left} records left unsent")
    return {"start": start, "end": end, "acked": acked, "failed_per_partition": failed, "failures": failures,
            "failed": sum(failed) + left}


def _producer_process(bootstrap: str, topic: str, count: int, size: int, first: int, barrier, results) -> None:
    try:
        # Metadata before the barrier, so the timed part is producing, not process start.
        Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
        barrier.wait(timeout=120)
        results.put(produce_records(bootstrap, topic, count, size, first))
    except BaseException as e:  # the parent must hear about it, not wait for a result forever
        results.put({"failed": 1, "failed_per_partition": [], "failures": [repr(e)]})
        raise


def produce_parallel(bootstrap: str, topic: str, count: int, size: int,
                     producers: int) -> tuple[float, list[int], list[list[float]]]:
    """Returns the wall time from the first start to the last flush, the acknowledged records per
    partition and each producer's [start, end] relative to the first start."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(producers + 1)
    results = ctx.Queue()
    shares = [count // producers + (1 if i < count % producers else 0) for i in range(producers)]
    procs = [ctx.Process(target=_producer_process, args=(bootstrap, topic, shares[i], size, i, barrier, results))
             for i in range(producers)]
    for p in procs:
        p.start()
    try:
        barrier.wait(timeout=120)
        out = [results.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    failed = [r for r in out if r["failed"]]
    if failed:
        raise RuntimeError(f"{topic}: parallel producers failed: {failed}")
    acked = [sum(r["acked"][p] for r in out) for p in range(PARTITIONS)]
    if sum(acked) != count:
        raise RuntimeError(f"{topic}: {sum(acked)} of {count} records acknowledged")
    t0 = min(r["start"] for r in out)
    spans = [[round(r["start"] - t0, 3), round(r["end"] - t0, 3)] for r in out]
    return max(r["end"] for r in out) - t0, acked, spans


def produce(bootstrap: str, topic: str, count: int, size: int) -> tuple[float, list[int]]:
    r = produce_records(bootstrap, topic, count, size, 0)
    if r["failed"]:
        raise RuntimeError(f"{topic}: {r['failed']} deliveries failed (per partition {r['failed_per_partition']}), "
                           f"e.g. {r['failures']}")
    return r["end"] - r["start"], r["acked"]


def consumer_for(bootstrap: str) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap, "group.id": "strata-cluster-bench", "enable.auto.commit": False,
        "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 8_388_608,
        "queued.max.messages.kbytes": 262_144,
    })


def consume(bootstrap: str, topic: str, expected: list[int], size: int) -> float:
    """Reads every partition from offset 0; each must return exactly its records, in offset order."""
    consumer = consumer_for(bootstrap)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    total = sum(expected)
    next_offset = [0] * PARTITIONS
    got, total_bytes = 0, 0
    start = time.perf_counter()
    deadline = start + 300
    while got < total:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{topic}: consumed {next_offset} of {expected}")
        # consume() waits for num_messages or the timeout: never ask for more than is left, or the
        # last call would sit out its timeout inside the timed part.
        for msg in consumer.consume(num_messages=min(100_000, total - got), timeout=1.0):
            if msg.error():
                raise KafkaException(msg.error())
            p = msg.partition()
            if msg.offset() != next_offset[p]:
                raise RuntimeError(f"{topic}-{p}: offset {msg.offset()} after {next_offset[p] - 1}")
            next_offset[p] += 1
            got += 1
            total_bytes += len(msg.value())
    seconds = time.perf_counter() - start
    consumer.close()
    if next_offset != expected or total_bytes != total * size:
        raise RuntimeError(f"{topic}: consumed {next_offset} ({total_bytes} B), produced {expected}")
    return seconds


def warm_up_group_coordinator(bootstrap: str, topic: str) -> None:
    """Asks for the bench group's committed offsets, so the broker creates `__consumer_offsets`
    (50 partitions) before the timed runs rather than during the first consume."""
    consumer = consumer_for(bootstrap)
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while True:
            try:
                consumer.committed([TopicPartition(topic, 0)], timeout=30)
                return
            except KafkaException as e:
                # Right after `__consumer_offsets` is created the chosen coordinator may not hold
                # its partition yet (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS); ask again.
                if time.monotonic() > deadline or not e.args[0].retriable() and e.args[0].code() not in (
                        KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                        KafkaError.COORDINATOR_NOT_AVAILABLE):
                    raise
                print(f"group coordinator not ready yet ({e.args[0].name()}); asking again", flush=True)
                time.sleep(0.2)
    finally:
        consumer.close()


def check_watermarks(bootstrap: str, topic: str, expected: list[int]) -> None:
    consumer = consumer_for(bootstrap)
    try:
        high = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(PARTITIONS)]
    finally:
        consumer.close()
    if high != expected:
        raise RuntimeError(f"{topic}: high watermarks {high}, acknowledged {expected}")


# --- reporting ------------------------------------------------------------------------------------

def log_problems(paths: list[Path]) -> dict[str, int]:
    """WARN and ERROR lines in the brokers' output (tracing's text format) and etcd's (zap JSON),
    counted per file and message (timestamps left out, so a repeated warning is one entry)."""
    found: dict[str, int] = {}
    for path in paths:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            tokens = line.split(None, 2)
            if len(tokens) == 3 and tokens[1] in ("WARN", "ERROR"):
                message = f"{tokens[1]} {tokens[2]}"
            elif line.startswith("{") and ('"level":"warn"' in line or '"level":"error"' in line):
                try:
                    entry = json.loads(line)
                except ValueError:
                    entry = {"level": "?", "msg": line}
                message = f"{entry.get('level', '?').upper()} {entry.get('msg', '')}"
            else:
                continue
            key = f"{path.parent.name}/{path.name}: {message[:240]}"
            found[key] = found.get(key, 0) + 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--count", type=int, default=600_000, help="records per phase")
    parser.add_argument("--size", type=int, default=100, help="record size in bytes")
    parser.add_argument("--producers", type=int, default=3, help="processes in the parallel produce phase")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of (single, cluster) runs; medians reported")
    parser.add_argument("--session-timeout-ms", type=int, default=3000,
                        help="the cluster brokers' broker.session.timeout.ms (their etcd lease)")
    parser.add_argument("--heartbeat-ms", type=int, default=500,
                        help="the cluster brokers' broker.heartbeat.interval.ms")
    parser.add_argument("--logs", type=Path, help="keep the brokers' and etcd's output here")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    phases = ("produce", "consume", f"produce x{args.producers}")
    runs: dict[str, dict[str, list[dict]]] = {s: {p: [] for p in phases} for s in SETUPS}
    with tempfile.TemporaryDirectory(prefix="strata-cluster-bench-") as tmp:
        tmp_path = Path(tmp)
        out_dir = args.logs or tmp_path / "out"
        etcd = Etcd(tmp_path / "etcd", out_dir / "etcd.log")
        setups: dict[str, Setup] = {}
        all_brokers: list[StrataBroker] = []
        try:
            (out_dir / "single").mkdir(parents=True, exist_ok=True)
            single = StrataBroker(args.strata, tmp_path / "single-data", out_dir / "single", {})
            all_brokers.append(single)
            single.start()
            setups["single"] = Setup("single", [single])

            etcd.start()
            cluster_overrides = {
                "strata.metadata.etcd.endpoints": etcd.endpoint,
                "broker.session.timeout.ms": str(args.session_timeout_ms),
                "broker.heartbeat.interval.ms": str(args.heartbeat_ms),
            }
            members = []
            for node in range(1, BROKERS + 1):
                (out_dir / f"node{node}").mkdir(parents=True, exist_ok=True)
                b = StrataBroker(args.strata, tmp_path / f"node{node}-data", out_dir / f"node{node}",
                                 {"node.id": str(node), **cluster_overrides})
                all_brokers.append(b)
                members.append(b.start())
            setups["cluster"] = Setup("cluster", members)
            wait_for_cluster(setups["cluster"].bootstrap)

            for setup in setups.values():
                create_topics(setup, [f"bench-{r}-{kind}" for r in range(args.rounds) for kind in ("one", "par")])
            for setup in setups.values():
                warm_up_group_coordinator(setup.bootstrap, "bench-0-one")
            for topic, leaders in setups["cluster"].leaders.items():
                print(f"cluster {topic}: partition leaders {leaders}", flush=True)

            for r in range(args.rounds):
                order = SETUPS if r % 2 == 0 else SETUPS[::-1]
                for name in order:
                    setup = setups[name]
                    one, par = f"bench-{r}-one", f"bench-{r}-par"
                    check_cluster(setup, [one, par])
                    os.sync()  # start without the previous run's dirty pages
                    cpu0 = setup.cpu_seconds()
                    p_s, acked = produce(setup.bootstrap, one, args.count, args.size)
                    cpu1 = setup.cpu_seconds()
                    c_s = consume(setup.bootstrap, one, acked, args.size)
                    cpu2 = setup.cpu_seconds()
                    os.sync()
                    cpu3 = setup.cpu_seconds()
                    x_s, x_acked, spans = produce_parallel(setup.bootstrap, par, args.count, args.size, args.producers)
                    cpu4 = setup.cpu_seconds()
                    check_watermarks(setup.bootstrap, par, x_acked)
                    figures = ((p_s, cpu1 - cpu0), (c_s, cpu2 - cpu1), (x_s, cpu4 - cpu3))
                    for phase, (seconds, cpu) in zip(phases, figures):
                        runs[name][phase].append({"seconds": seconds, "broker_cpu_s": round(cpu, 2)})
                    runs[name][phases[2]][-1]["producer_spans"] = spans
                    print(f"round {r} {name:<7} " + "  ".join(
                        f"{phase} {args.count / seconds:>9,.0f} rec/s (broker CPU {cpu:.2f} s)"
                        for phase, (seconds, cpu) in zip(phases, figures)) + f"  producers' spans {spans}", flush=True)
        except BaseException:
            for b in all_brokers:
                print(b.output_tail(5_000), file=sys.stderr)
            raise
        finally:
            codes = {}
            for b in all_brokers:
                if b.running():
                    codes[str(b.log_dir.name)] = b.stop()
            etcd.stop()
            outputs = [f for b in all_brokers for f in b.output_files] + [etcd.output]
            problems = log_problems(outputs)

    rows = []
    medians: dict[str, dict[str, float]] = {name: {} for name in SETUPS}
    for name in SETUPS:
        for phase in phases:
            rate = statistics.median(args.count / x["seconds"] for x in runs[name][phase])
            cpu = statistics.median(x["broker_cpu_s"] for x in runs[name][phase])
            medians[name][phase] = rate
            rows.append({"setup": name, "phase": phase, "records_per_s": round(rate),
                         "mb_per_s": round(rate * args.size / MB, 1), "broker_cpu_s": cpu,
                         "runs": runs[name][phase]})
    ratios = {phase: round(medians["cluster"][phase] / medians["single"][phase], 3) for phase in phases}
    # The two setups' runs of one round are minutes apart at most, so each round's own ratio shows
    # how far machine noise moves the comparison.
    paired = {phase: sorted(round(one["seconds"] / three["seconds"], 3)
                            for one, three in zip(runs["single"][phase], runs["cluster"][phase])) for phase in phases}

    print(f"\n{args.count:,} x {args.size} B records per phase over {PARTITIONS} partitions, median of "
          f"{args.rounds} rounds, {os.cpu_count()} CPUs (records/s, MB/s of payload, brokers' CPU seconds)",
          flush=True)
    print(f"{'setup':<8} {'phase':<11} {'records/s':>11} {'MB/s':>7} {'CPU s':>6}  {'cluster / single':>16}"
          f"  {'per round':>11}", flush=True)
    for row in rows:
        ratio = ""
        if row["setup"] == "cluster":
            each = paired[row["phase"]]
            ratio = f"{ratios[row['phase']]:16.2f}  {each[0]:.2f} - {each[-1]:.2f}"
        print(f"{row['setup']:<8} {row['phase']:<11} {row['records_per_s']:>11,} {row['mb_per_s']:>7.1f} "
              f"{row['broker_cpu_s']:>6.2f}  {ratio}".rstrip(), flush=True)
    print(f"WARN/ERROR log lines (brokers and etcd): {sum(problems.values())}", flush=True)
    for message, n in problems.items():
        print(f"  {n:>4} x {message}", flush=True)
    bad_exits = {k: v for k, v in codes.items() if v != 0}
    if bad_exits:
        print(f"brokers that did not exit cleanly: {bad_exits}", flush=True)

    if args.json:
        results = {"count": args.count, "size": args.size, "partitions": PARTITIONS, "producers": args.producers,
                   "rounds": args.rounds, "cpus": os.cpu_count(), "session_timeout_ms": args.session_timeout_ms,
                   "heartbeat_ms": args.heartbeat_ms, "results": rows, "cluster_vs_single": ratios,
                   "cluster_vs_single_per_round": paired, "cluster_leaders": setups["cluster"].leaders,
                   "log_warnings_and_errors": problems, "broker_exit_codes": codes}
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if bad_exits else 0


if __name__ == "__main__":
    sys.exit(main())
