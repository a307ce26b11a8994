"""How long does a rebalance stop consumption? Classic (eager) versus KIP-848 consumer groups,
measured in the same run on the same broker.

Run through scripts/bench-rebalance.sh. One release `strata serve` on a temporary log dir with both
protocols enabled (`group.coordinator.rebalance.protocols=classic,consumer`, 6 s sessions and
500 ms heartbeats for both). Each round runs, for every client and protocol in rotated order, on a
fresh 6-partition topic and group (the members are tests/clients' group_member.py /
GroupMember.java, one process each; classic members use the eager range assignor):

1. three members join and consume while a producer writes 300 records/s round-robin to every
   partition;
2. **join**: a fourth member subscribes;
3. **loss**: one of the three original members is killed with SIGKILL (no leave, no commit).

Per event, from the moment it happens (the newcomer's `started` line, the kill):
- **recovered**: seconds until every partition has been consumed by its final owner since that
  owner (last) got it, i.e. until the whole topic is being consumed again;
- **others' gap**: the longest stretch without a record at any member that stays in the group
  (the three old members for a join, the two survivors for a loss), from the event until a second
  after recovery. With the eager classic protocol every member stops for the rebalance; with the
  consumer protocol members keep the partitions they are not giving up.

The loss figures include detecting the dead member: the 6 s session timeout for both protocols.
Printed: one row per (client, protocol, event) with the median over the rounds (and min-max).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "clients"))

from broker import StrataBroker  # noqa: E402
from group_harness import BackgroundProducer, Member, MemberFactory, longest_gap, wait_stable  # noqa: E402
from records import create_topic  # noqa: E402

PARTITIONS = 6
SESSION_MS = 6000
BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
}
# After recovery, how much longer the others' consumption is watched for a late stop.
TAIL_S = 1.0
TIMEOUT_S = 60.0


def compile_java(out: Path) -> str:
    """Compiles tests/clients/java (as the test suite's `java` fixture does); returns the classpath."""
    jars = ROOT / ".test-deps" / "jars"
    sources = sorted(str(p) for p in (ROOT / "tests" / "clients" / "java").glob("*.java"))
    classpath = os.pathsep.join(str(j) for j in sorted(jars.glob("*.jar")))
    subprocess.run(["javac", "-cp", classpath, "-d", str(out), *sources], check=True)
    return os.pathsep.join([str(out), str(jars / "*")])


def recovered_at(members: list[Member], since: float) -> float | None:
    """When every partition was consumed by the member that holds it now, counting only records
    it received after the event and after it (last) got that partition; None if not yet."""
    latest = since
    for m in members:
        held = m.assignment() or set()
        for p in held:
            got = since
            for e in m.snapshot():
                if e.kind == "assigned" and p in e.fields["partitions"]:
                    got = max(got, e.at)
            first = next((e.at for e in m.snapshot()
                          if e.kind == "record" and e.fields["partition"] == p and e.at > got), None)
            if first is None:
                return None
            latest = max(latest, first)
    covered = sorted(p for m in members for p in (m.assignment() or set()))
    return latest if covered == list(range(PARTITIONS)) else None


def measure(event_at: float, live: list[Member], others: list[Member], sizes: list[int]) -> dict:
    """Waits for the assignment after the event (`sizes`: partitions per live member) and for
    every partition to be consumed again; returns the event's figures."""
    wait_stable(live, PARTITIONS, sizes=sizes, timeout=TIMEOUT_S + SESSION_MS / 1000)
    deadline = time.monotonic() + TIMEOUT_S
    while (done := recovered_at(live, event_at)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("partitions not consumed again within the timeout:\n"
                               + "\n".join(m.describe() for m in live))
        time.sleep(0.05)
    time.sleep(max(0.0, done + TAIL_S - time.monotonic()))
    gap = max(longest_gap(m.record_times(), event_at, done + TAIL_S) for m in others)
    return {"recovered_s": round(done - event_at, 3), "others_gap_s": round(gap, 3)}


def run_once(broker: StrataBroker, factory: MemberFactory, protocol: str, tag: str) -> dict[str, dict]:
    topic, group = f"rb-{tag}", f"g-rb-{tag}"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    producer = BackgroundProducer(broker.bootstrap, topic, PARTITIONS, tag)
    try:
        old = [factory.start(n, broker.bootstrap, topic, group, protocol=protocol) for n in ["a", "b", "c"]]
        wait_stable(old, PARTITIONS, sizes=[2, 2, 2], timeout=TIMEOUT_S)
        since = time.monotonic()
        for m in old:
            m.wait_for(lambda m: len(m.record_times(since)) >= 20, "steady consumption")
        newcomer = factory.start("d", broker.bootstrap, topic, group, protocol=protocol)
        joined = newcomer.wait_for(lambda m: m.first("started"), "subscribe").at
        join = measure(joined, old + [newcomer], old, sizes=[1, 1, 2, 2])
        victim = old[0]
        killed = victim.kill()
        live = old[1:] + [newcomer]
        loss = measure(killed, live, live, sizes=[2, 2, 2])
        for m in live:
            m.close()
        return {"join": join, "loss": loss}
    finally:
        producer.stop()
        factory.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", default="java,confluent", help="comma-separated: java, confluent")
    parser.add_argument("--protocols", default="classic,consumer", help="comma-separated: classic, consumer")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    clients = args.clients.split(",")
    protocols = args.protocols.split(",")
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="strata-rebalance-bench-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        (tmp_path / "classes").mkdir()
        classpath = compile_java(tmp_path / "classes") if "java" in clients else None
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out", BROKER_SETTINGS)
        broker.start()
        try:
            combos = [(c, p) for c in clients for p in protocols]
            for r in range(args.rounds):
                # Rotated order: a warm-up or background load falls on every combination alike.
                for client, protocol in combos[r % len(combos):] + combos[:r % len(combos)]:
                    result = run_once(broker, MemberFactory(client, classpath), protocol, f"{client}-{protocol}-{r}")
                    for event, figures in result.items():
                        runs.setdefault(f"{client} {protocol} {event}", []).append(figures)
                    print(f"round {r} {client:<9} {protocol:<8} " + "  ".join(
                        f"{e}: recovered {f['recovered_s']:.2f} s, others' gap {f['others_gap_s']:.2f} s"
                        for e, f in result.items()), flush=True)
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            if broker.running():
                broker.stop()

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    print(f"\nmedian (min-max) over {args.rounds} rounds, seconds; loss includes the {SESSION_MS} ms session timeout")
    print("| client | protocol | event | recovered | others' longest gap |\n|---|---|---|---:|---:|")
    summary = {}
    for key, figures in runs.items():
        client, protocol, event = key.split()
        rec = [f["recovered_s"] for f in figures]
        gap = [f["others_gap_s"] for f in figures]
        summary[key] = {"recovered_median_s": statistics.median(rec), "others_gap_median_s": statistics.median(gap)}
        print(f"| {client} | {protocol} | {event} | {cell(rec)} | {cell(gap)} |")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "runs": runs, "summary": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
