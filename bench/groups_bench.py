"""Does consumer-group traffic slow the data path? Produce/consume throughput with and without a
busy group, measured in the same run on the same broker.

Run through scripts/bench-groups.sh. One release `strata serve` on a temporary log dir; each round
runs the same workload in three modes, in rotated order after an fsync of everything dirty, so
machine noise and order effects fall on every mode alike:

- workload (every mode): produce COUNT x SIZE B records to a fresh 1-partition topic with librdkafka
  (bench/broker_bench.py's producer settings), then consume them all from a manually assigned
  partition;
- baseline: nothing else;
- group: a separate process runs one group of MEMBERS librdkafka consumers subscribed to a
  6-partition topic that receives a trickle of 10 records/s; each member heartbeats every 500 ms
  and commits its positions synchronously every second. The load reports the commits it made, so
  a silent load cannot pass for a fast one;
- trickle: the same load process with the consumers on assign() instead of subscribe(): the same
  produce and fetch requests without heartbeats, joins or commits, so group / trickle isolates the
  group protocol's share.

Reported: per mode the median records/s of produce and consume over the rounds, the same per
broker CPU-second (utime + stime from /proc; it charges all of the load's broker work, trickle
included, to the workload, so it bounds the load's cost rather than measuring a slowdown), and the
ratios group / baseline (the issue's bar: at least 0.90) and group / trickle.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))
sys.path.insert(0, str(HERE))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from broker import StrataBroker  # noqa: E402
from broker_bench import Workload, consume, produce  # noqa: E402

LOAD_TOPIC = "group-load"
LOAD_GROUP = "bench-group"
LOAD_PARTITIONS = 6


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})
    client.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(timeout=30)


# --- the group load (runs in its own process: `groups_bench.py --load BOOTSTRAP MEMBERS`) ---------

def run_load(bootstrap: str, members: int, grouped: bool) -> int:
    stop = threading.Event()
    commits = [0] * members
    assigned = [threading.Event() for _ in range(members)]
    errors: list[str] = []

    def member(index: int) -> None:
        consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": LOAD_GROUP, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "partition.assignment.strategy": "range",
        })
        if grouped:
            consumer.subscribe([LOAD_TOPIC], on_assign=lambda _c, parts: assigned[index].set() if parts else None)
        else:  # the same consumers and fetches without the group: no heartbeats, joins or commits
            consumer.assign([TopicPartition(LOAD_TOPIC, p, 0) for p in range(LOAD_PARTITIONS) if p % members == index])
            assigned[index].set()
        next_commit = time.monotonic() + 1.0
        positions: dict[int, int] = {}
        try:
            while not stop.is_set():
                for msg in consumer.consume(num_messages=1000, timeout=0.1):
                    if msg.error():
                        raise KafkaException(msg.error())
                    positions[msg.partition()] = msg.offset() + 1
                if grouped and time.monotonic() >= next_commit:
                    next_commit += 1.0
                    held = {tp.partition for tp in consumer.assignment()}
                    offsets = [TopicPartition(LOAD_TOPIC, p, positions.get(p, 0)) for p in sorted(held)]
                    offsets = [tp for tp in offsets if tp.offset > 0]
                    if offsets:
                        consumer.commit(offsets=offsets, asynchronous=False)
                        commits[index] += 1
        except KafkaException as e:
            errors.append(str(e))
        finally:
            consumer.close()

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    # A trickle of records so every partition's position moves between commits.
    seq = 0
    deadline = time.monotonic() + 60
    reported = False
    watcher = threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True)
    watcher.start()
    while not stop.is_set():
        producer.produce(LOAD_TOPIC, f"load-{seq}".encode(), partition=seq % LOAD_PARTITIONS)
        seq += 1
        producer.poll(0.1)
        if not reported and all(e.is_set() for e in assigned):
            print(json.dumps({"event": "ready"}), flush=True)
            reported = True
        if not reported and time.monotonic() > deadline:
            errors.append("group members not assigned within 60 s")
            stop.set()
    for t in threads:
        t.join()
    producer.flush(10)
    print(json.dumps({"event": "done", "commits": sum(commits), "records": seq, "errors": errors}), flush=True)
    return 1 if errors else 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to report records per broker CPU-second."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class GroupLoad:
    """The load process; start() returns once every member holds partitions."""

    def __init__(self, bootstrap: str, members: int, grouped: bool):
        mode = "group" if grouped else "assign"
        self.mode = mode
        self.proc = subprocess.Popen([sys.executable, __file__, "--load", bootstrap, str(members), mode],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.started = 0.0

    def wait_ready(self) -> None:
        line = self.proc.stdout.readline()
        if not line or json.loads(line)["event"] != "ready":
            raise RuntimeError(f"group load did not start: {line!r}")
        self.started = time.perf_counter()

    def stop(self) -> dict:
        self.proc.stdin.close()
        out = self.proc.stdout.read().strip().splitlines()
        code = self.proc.wait(timeout=60)
        result = json.loads(out[-1])
        result["seconds"] = time.perf_counter() - self.started
        result["mode"] = self.mode
        if code != 0 or result["errors"]:
            raise RuntimeError(f"group load failed ({code}): {result}")
        return result


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        return run_load(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "group")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of (baseline, trickle, group) runs")
    parser.add_argument("--count", type=int, default=300_000, help="records per workload")
    parser.add_argument("--size", type=int, default=100, help="record size in bytes")
    parser.add_argument("--members", type=int, default=3, help="members of the loading group")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    phases = ("produce", "consume", "produce_per_cpu_s", "consume_per_cpu_s")
    modes = ("baseline", "trickle", "group")
    rates: dict[str, dict[str, list[float]]] = {m: {p: [] for p in phases} for m in modes}
    loads = []
    with tempfile.TemporaryDirectory(prefix="strata-groups-bench-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out",
                              {"group.initial.rebalance.delay.ms": "0"})
        broker.start()
        try:
            create_topic(broker.bootstrap, LOAD_TOPIC, LOAD_PARTITIONS)
            for r in range(args.rounds):
                for mode in modes:
                    create_topic(broker.bootstrap, f"bench-{mode}-{r}")
            for r in range(args.rounds):
                # Rotated order: whatever the previous run left behind (dirty pages, a warm cache)
                # falls on each mode equally often.
                order = modes[r % 3:] + modes[:r % 3]
                for mode in order:
                    w = Workload(f"bench-{mode}-{r}", args.count, args.size)
                    os.sync()  # start each run without the previous run's dirty pages
                    load = None
                    if mode != "baseline":
                        load = GroupLoad(broker.bootstrap, args.members, grouped=mode == "group")
                        load.wait_ready()
                    pid = broker.process.pid
                    try:
                        cpu0 = cpu_seconds(pid)
                        p_s = produce(broker.bootstrap, w)
                        cpu1 = cpu_seconds(pid)
                        c_s = consume(broker.bootstrap, w)
                        cpu2 = cpu_seconds(pid)
                    finally:
                        if load is not None:
                            loads.append(load.stop())
                    rates[mode]["produce"].append(w.count / p_s)
                    rates[mode]["consume"].append(w.count / c_s)
                    rates[mode]["produce_per_cpu_s"].append(w.count / max(cpu1 - cpu0, 1e-3))
                    rates[mode]["consume_per_cpu_s"].append(w.count / max(cpu2 - cpu1, 1e-3))
                    extra = ""
                    if mode == "group":
                        extra = f"  group: {loads[-1]['commits']} commits in {loads[-1]['seconds']:.1f} s"
                    print(f"round {r} {mode:<8} produce {w.count / p_s:>10,.0f} rec/s  consume "
                          f"{w.count / c_s:>10,.0f} rec/s  broker CPU {cpu1 - cpu0:.2f} s + {cpu2 - cpu1:.2f} s"
                          f"{extra}", flush=True)
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            if broker.running():
                broker.stop()

    results = {"count": args.count, "size": args.size, "members": args.members, "rounds": args.rounds,
               "loads": loads, "runs": rates}
    for phase in phases:
        base, trickle, grp = (statistics.median(rates[m][phase]) for m in modes)
        results[f"{phase}_group_vs_baseline"] = round(grp / base, 3)
        results[f"{phase}_group_vs_trickle"] = round(grp / trickle, 3)
        print(f"{phase:<18} median baseline {base:>11,.0f}  trickle {trickle:>11,.0f}  group {grp:>11,.0f}  "
              f"group/baseline {grp / base:.3f}  group/trickle {grp / trickle:.3f}", flush=True)
    group_loads = [x for x in loads if x["mode"] == "group"]
    commits_per_s = sum(x["commits"] for x in group_loads) / sum(x["seconds"] for x in group_loads)
    results["group_commits_per_s"] = round(commits_per_s, 2)
    print(f"group load: {commits_per_s:.2f} commits/s over {args.members} members", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
