"""Replication's cost and failover times: three brokers and etcd, measured in one run.

Run through scripts/bench-replication.sh. It starts one etcd and three cluster brokers
(node.id 1..3) on loopback, then:

- produce: COUNT x SIZE B records (1 KiB by default) to a fresh 6-partition topic from one
  librdkafka producer (acks as given, no idempotence, linger.ms=50, 1 MiB batches, no
  compression), in three setups: acks=1 with replication factor 1, acks=1 with 3, acks=all
  with 3 (min.insync.replicas=2). Each round runs the three in a rotated order after an fsync of
  everything dirty; the median records/s, MB/s and brokers' CPU seconds over the rounds are
  printed with the ratio acks=all RF 3 / acks=1 RF 1 (issue 15's target: at least 0.40);
- failover: a 1-partition topic with replication factor 3 and min.insync.replicas=2; per trial
  a warm idempotent producer (acks=all), SIGKILL of the partition's leader at t0, one record
  produced at once; the time from t0 to its acknowledgement (which only a new leader can give),
  then the killed broker restarted and the ISR full again before the next trial;
- controlled shutdown: the same with SIGTERM (Kafka's controlled shutdown moves leadership
  first, and the old leader serves until then), but the record is produced once another broker's
  Metadata names a new leader: t0 to its acknowledgement, and t0 to the process's exit.

Min / median / max over the trials are printed with the settings that bound them (the brokers'
session timeout and heartbeat, replica.lag.time.max.ms and replica.fetch.wait.max.ms, and the
client's retry backoff and metadata refresh). Where replication factor 3 is refused (before
replication), those parts print "RF 3 unavailable" and the rest runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from broker import StrataBroker  # noqa: E402
from cluster import StrataCluster, metadata, wait_until  # noqa: E402
from cluster_bench import cpu_seconds, log_problems  # noqa: E402
from etcd import EtcdServer  # noqa: E402

MB = 1_000_000
PARTITIONS = 6
BROKERS = 3
READY_TIMEOUT_S = 60.0
SETUPS = (("acks=1", 1), ("acks=1", 3), ("acks=all", 3))

THROUGHPUT_CONFIG = {
    "compression.type": "none", "linger.ms": 50, "batch.size": 1_000_000, "batch.num.messages": 1_000_000,
    "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000,
    "message.timeout.ms": 120_000, "enable.idempotence": False, "log_level": 3,
}
# The client's side of a failover: how soon it retries and looks up the new leader.
PROBE_CONFIG = {
    "acks": "all", "enable.idempotence": True, "linger.ms": 0, "message.timeout.ms": 120_000,
    "retry.backoff.ms": 20, "retry.backoff.max.ms": 100, "reconnect.backoff.ms": 20,
    "reconnect.backoff.max.ms": 100, "request.timeout.ms": 10_000,
    "log_level": 2,  # the killed leader's refused connections are expected, not news
}


class RfUnavailable(RuntimeError):
    """The cluster refuses the replication factor (INVALID_REPLICATION_FACTOR)."""


def setup_name(acks: str, rf: int) -> str:
    return f"{acks} RF {rf}"


# --- the cluster ------------------------------------------------------------------------------

class Bench:
    def __init__(self, strata: Path, tmp: Path, out_dir: Path, settings: dict[str, str]):
        self.etcd = EtcdServer(tmp / "etcd", out_dir / "etcd")
        self.etcd.start()
        prefix = f"/strata-bench/{uuid.uuid4().hex[:8]}"
        self.brokers: dict[int, StrataBroker] = {}
        for node in range(1, BROKERS + 1):
            (out_dir / f"node{node}").mkdir(parents=True, exist_ok=True)
            self.brokers[node] = StrataBroker(strata, tmp / f"node{node}-data", out_dir / f"node{node}", {
                "node.id": str(node), "strata.metadata.etcd.endpoints": self.etcd.endpoint,
                "strata.metadata.etcd.prefix": prefix, **settings}, keep_port=True)
        for b in self.brokers.values():
            b.spawn()
        for b in self.brokers.values():
            b.wait_ready()
        self.cluster = StrataCluster(self.brokers, self.etcd.endpoint, prefix)
        self.cluster.wait_for_members(timeout_s=READY_TIMEOUT_S)

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(b.process.pid) for b in self.brokers.values() if b.running())

    def create_topic(self, topic: str, partitions: int, rf: int) -> None:
        config = {"min.insync.replicas": "2"} if rf > 1 else {}
        client = AdminClient({"bootstrap.servers": self.bootstrap})
        future = client.create_topics([NewTopic(topic, partitions, rf, config=config)], operation_timeout=60)[topic]
        try:
            future.result(timeout=60)
        except KafkaException as e:
            if e.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR:
                raise RfUnavailable(e.args[0].str()) from e
            raise
        self.wait_in_sync(topic, partitions)

    def wait_in_sync(self, topic: str, partitions: int) -> None:
        """Until every running broker shows each partition with a leader and a full ISR."""
        def ready() -> bool:
            for node, b in self.brokers.items():
                if not b.running():
                    return False
                md = metadata(b.bootstrap, [topic])
                parts = md.topics[topic].partitions
                if len(parts) != partitions or len(md.brokers) != BROKERS:
                    return False
                if any(i.leader < 0 or set(i.isr) != set(i.replicas) for i in parts.values()):
                    return False
            return True

        wait_until(ready, READY_TIMEOUT_S, f"{topic}: every partition led with a full ISR", interval_s=0.05)

    def leader(self, topic: str) -> int:
        return self.cluster.metadata(None, [topic]).leaders(topic)[0]

    def stop(self) -> dict[str, int]:
        codes = {}
        for node, b in self.brokers.items():
            if b.running():
                codes[f"node{node}"] = b.stop()
        self.etcd.stop()
        return codes


# --- throughput -------------------------------------------------------------------------------

def produce(bootstrap: str, topic: str, acks: str, count: int, size: int) -> float:
    """Seconds to produce and have acknowledged COUNT records, the partitions taken in turn."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks.split("=")[1], **THROUGHPUT_CONFIG})
    payload = (bytes(range(256)) * (size // 256 + 1))[:size]
    failures: list[str] = []
    acked = 0

    def on_delivery(err, _msg):
        nonlocal acked
        if err is not None:
            if len(failures) < 3:
                failures.append(str(err))
        else:
            acked += 1

    producer.list_topics(topic, timeout=30)
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, payload, partition=i % PARTITIONS, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(300)
    seconds = time.perf_counter() - start
    if left or acked != count:
        raise RuntimeError(f"{topic}: {acked} of {count} acknowledged, {left} unsent, e.g. {failures}")
    return seconds


# --- failover ---------------------------------------------------------------------------------

def probe_ack(producer: Producer, topic: str, timeout_s: float = 120.0) -> float:
    """Produces one record now; returns the monotonic time its acknowledgement arrived."""
    done: dict[str, object] = {}

    def on_delivery(err, msg):
        done["at"] = time.monotonic()
        done["err"] = err

    producer.produce(topic, b"probe", partition=0, on_delivery=on_delivery)
    deadline = time.monotonic() + timeout_s
    while "at" not in done:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}: probe not acknowledged within {timeout_s}s")
        producer.poll(0.001)
    if done["err"] is not None:
        raise RuntimeError(f"{topic}: probe failed: {done['err']}")
    return done["at"]  # type: ignore[return-value]


def failover_trial(bench: Bench, topic: str, signal_name: str) -> dict[str, float | int]:
    """One leader stopped by SIGKILL or SIGTERM: seconds to the first acknowledgement after it (and,
    for SIGTERM, to the process's exit); the broker is restarted and the ISR full afterwards."""
    bench.wait_in_sync(topic, 1)
    producer = Producer({"bootstrap.servers": bench.bootstrap, **PROBE_CONFIG})
    for _ in range(20):  # warm: connected to the leader, producer id and sequence in use
        probe_ack(producer, topic)
    old = bench.leader(topic)
    broker = bench.brokers[old]
    exited: dict[str, float] = {}

    def wait_exit():
        broker.process.wait()
        exited["at"] = time.monotonic()

    t0 = time.monotonic()
    if signal_name == "SIGKILL":
        broker.process.kill()
    else:
        broker.process.terminate()
    waiter = threading.Thread(target=wait_exit, daemon=True)
    waiter.start()
    elected = None
    if signal_name == "SIGTERM":
        # A controlled shutdown keeps serving until it hands leadership over, so a record produced
        # at once may be acknowledged by the old leader: probe once another broker is named leader.
        survivor = next(b for n, b in bench.brokers.items() if n != old)
        wait_until(lambda: metadata(survivor.bootstrap, [topic]).leaders(topic)[0] not in (old, -1),
                   READY_TIMEOUT_S, f"a new leader of {topic} after SIGTERM", interval_s=0.005)
        elected = time.monotonic()
    acked = probe_ack(producer, topic)
    producer.flush(10)
    waiter.join(120)
    if "at" not in exited:
        raise RuntimeError(f"broker {old} still running 120 s after {signal_name}")
    new = bench.leader(topic)
    if new == old:
        raise RuntimeError(f"{topic}: broker {old} still leads after {signal_name}")
    result = {"old_leader": old, "new_leader": new, "to_first_ack_s": round(acked - t0, 3)}
    if signal_name == "SIGTERM":
        result["to_new_leader_s"] = round(elected - t0, 3)
        result["to_exit_s"] = round(exited["at"] - t0, 3)
        result["exit_code"] = broker.process.returncode
    broker.start()
    bench.wait_in_sync(topic, 1)
    return result


def spread(values: list[float]) -> str:
    return f"min {min(values):.3f} s, median {statistics.median(values):.3f} s, max {max(values):.3f} s"


# --- main ---------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--count", type=int, default=100_000, help="records per produce run")
    parser.add_argument("--size", type=int, default=1024, help="record size in bytes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three produce setups; medians")
    parser.add_argument("--trials", type=int, default=5, help="failover and controlled-shutdown trials each")
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--replica-lag-ms", type=int, default=3000, help="replica.lag.time.max.ms")
    parser.add_argument("--replica-fetch-wait-ms", type=int, default=500, help="replica.fetch.wait.max.ms")
    parser.add_argument("--logs", type=Path, help="keep the brokers' and etcd's output here")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    settings = {
        "broker.session.timeout.ms": str(args.session_timeout_ms),
        "broker.heartbeat.interval.ms": str(args.heartbeat_ms),
        "replica.lag.time.max.ms": str(args.replica_lag_ms),
        "replica.fetch.wait.max.ms": str(args.replica_fetch_wait_ms),
    }
    client = {k: PROBE_CONFIG[k] for k in ("retry.backoff.ms", "retry.backoff.max.ms", "reconnect.backoff.max.ms")}
    print("brokers: " + " ".join(f"{k}={v}" for k, v in settings.items()), flush=True)
    print("failover client: " + " ".join(f"{k}={v}" for k, v in client.items()), flush=True)

    results: dict = {"count": args.count, "size": args.size, "partitions": PARTITIONS, "rounds": args.rounds,
                     "trials": args.trials, "cpus": os.cpu_count(), "settings": settings, "client": client}
    runs: dict[str, list[dict]] = {setup_name(a, rf): [] for a, rf in SETUPS}
    unavailable: str | None = None
    with tempfile.TemporaryDirectory(prefix="strata-replication-bench-") as tmp:
        tmp_path = Path(tmp)
        out_dir = args.logs or tmp_path / "out"
        bench = Bench(args.strata, tmp_path, out_dir, settings)
        codes: dict[str, int] = {}
        try:
            setups = list(SETUPS)
            for r in range(args.rounds):
                for acks, rf in setups:
                    try:
                        bench.create_topic(f"bench-{r}-{acks.replace('=', '')}-rf{rf}", PARTITIONS, rf)
                    except RfUnavailable as e:
                        unavailable = str(e)
            if unavailable:
                print(f"RF 3 unavailable: {unavailable}", flush=True)
                setups = [s for s in setups if s[1] == 1]
            for r in range(args.rounds):
                order = setups[r % len(setups):] + setups[:r % len(setups)]
                for acks, rf in order:
                    topic = f"bench-{r}-{acks.replace('=', '')}-rf{rf}"
                    os.sync()
                    cpu0 = bench.cpu_seconds()
                    seconds = produce(bench.bootstrap, topic, acks, args.count, args.size)
                    cpu = bench.cpu_seconds() - cpu0
                    runs[setup_name(acks, rf)].append({"seconds": round(seconds, 3), "broker_cpu_s": round(cpu, 2)})
                    print(f"round {r} {setup_name(acks, rf):<13} {args.count / seconds:>9,.0f} rec/s "
                          f"{args.count * args.size / seconds / MB:7.1f} MB/s (brokers' CPU {cpu:.2f} s)", flush=True)

            trials: dict[str, list[dict]] = {"SIGKILL": [], "SIGTERM": []}
            if not unavailable:
                bench.create_topic("failover", 1, 3)
                for i in range(args.trials):
                    for sig in ("SIGKILL", "SIGTERM"):
                        t = failover_trial(bench, "failover", sig)
                        trials[sig].append(t)
                        print(f"trial {i} {sig}: {t}", flush=True)
        except BaseException:
            for b in bench.brokers.values():
                print(b.output_tail(5_000), file=sys.stderr)
            raise
        finally:
            codes = bench.stop()
            outputs = [f for b in bench.brokers.values() for f in b.output_files] + bench.etcd.output_files
            problems = log_problems(outputs)

    print(f"\n{args.count:,} x {args.size} B records per run over {PARTITIONS} partitions, one producer, "
          f"median of {args.rounds} rounds, {os.cpu_count()} CPUs", flush=True)
    medians = {}
    rows = []
    for name, xs in runs.items():
        if not xs:
            print(f"{name:<13} RF 3 unavailable", flush=True)
            continue
        rate = statistics.median(args.count / x["seconds"] for x in xs)
        medians[name] = rate
        cpu = statistics.median(x["broker_cpu_s"] for x in xs)
        rows.append({"setup": name, "records_per_s": round(rate), "mb_per_s": round(rate * args.size / MB, 1),
                     "broker_cpu_s": cpu, "runs": xs})
        print(f"{name:<13} {rate:>9,.0f} rec/s {rate * args.size / MB:7.1f} MB/s  brokers' CPU {cpu:.2f} s", flush=True)
    results["produce"] = rows
    base, best = setup_name("acks=1", 1), setup_name("acks=all", 3)
    if best in medians:
        ratio = medians[best] / medians[base]
        # Each round's own ratio: its runs are seconds apart, so it shows how far noise moves it.
        paired = sorted(round(one["seconds"] / three["seconds"], 2) for one, three in zip(runs[base], runs[best]))
        results["acks_all_rf3_vs_acks1_rf1"] = round(ratio, 3)
        results["acks_all_rf3_vs_acks1_rf1_per_round"] = paired
        print(f"{best} / {base}: {ratio:.2f} (target >= 0.40), per round {paired[0]:.2f} - {paired[-1]:.2f}",
              flush=True)
    else:
        print(f"{best} / {base}: RF 3 unavailable", flush=True)

    if unavailable:
        print("failover and controlled shutdown: RF 3 unavailable", flush=True)
    else:
        kill = [t["to_first_ack_s"] for t in trials["SIGKILL"]]
        term = [t["to_first_ack_s"] for t in trials["SIGTERM"]]
        exits = [t["to_exit_s"] for t in trials["SIGTERM"]]
        print(f"failover (leader SIGKILL -> first acknowledged produce), {len(kill)} trials: {spread(kill)}", flush=True)
        print(f"controlled shutdown (leader SIGTERM -> first acknowledged produce): {spread(term)}", flush=True)
        print(f"controlled shutdown (leader SIGTERM -> process exit): {spread(exits)}", flush=True)
        results["failover"] = trials
    print("bounded by: " + " ".join(f"{k}={v}" for k, v in settings.items()), flush=True)
    print(f"WARN/ERROR log lines (brokers and etcd): {sum(problems.values())}", flush=True)
    for message, n in list(problems.items())[:40]:
        print(f"  {n:>4} x {message}", flush=True)
    bad_exits = {k: v for k, v in codes.items() if v != 0}
    if bad_exits:
        print(f"brokers that did not exit cleanly: {bad_exits}", flush=True)
    results["log_warnings_and_errors"] = problems
    results["broker_exit_codes"] = codes
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if bad_exits else 0


if __name__ == "__main__":
    sys.exit(main())
