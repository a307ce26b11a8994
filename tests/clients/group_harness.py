"""Drives consumer-group members in subprocesses for the group tests (test_groups*.py).

A `Member` is one consumer process (group_member.py for librdkafka and kafka-python,
GroupMember.java for the Java client) whose JSON-line events are collected by a reader thread,
so a test can wait on a condition with a deadline, kill the process with SIGKILL, and still read
everything it printed before dying. `BackgroundProducer` writes records to every partition while
the group rebalances; `check_exactly_once` compares what all members processed with what was
acknowledged.

A member runs the classic protocol unless started with `protocol="consumer"` (KIP-848). Classic
members here use the eager assignor: every callback carries the whole assignment and a member holds
nothing between its revocation and its next assignment. Consumer-protocol callbacks are incremental,
so for those members the held set comes from the `held` field the member prints after each change.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

HERE = Path(__file__).resolve().parent
CLIENTS = ["confluent", "java", "kafka-python"]
SESSION_MS = 6000
WAIT_S = 60.0


@dataclass
class Event:
    at: float  # time.monotonic() when the line was read
    fields: dict

    @property
    def kind(self) -> str:
        return self.fields["event"]


class Member:
    """One group member process and the events it printed."""

    def __init__(self, name: str, argv: list[str], protocol: str = "classic", topic: str | None = None):
        self.name = name
        self.argv = argv
        self.protocol = protocol
        self.topic = topic  # the topic whose partitions `assignment()` and `records()` report
        self.events: list[Event] = []
        self.stderr_lines: list[str] = []
        self.cond = threading.Condition()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            event = Event(time.monotonic(), json.loads(line))
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_lines.append(line)
            del self.stderr_lines[:-200]

    # --- state derived from the events -------------------------------------------------------

    def snapshot(self) -> list[Event]:
        with self.cond:
            return list(self.events)

    def assignment(self) -> set[int] | None:
        """Partitions held after the last event, or None while a rebalance is under way (classic)
        or before the first assignment (consumer protocol)."""
        if self.protocol == "consumer":
            tps = self.held()
            return None if tps is None else {p for t, p in tps if self.topic is None or t == self.topic}
        held: set[int] | None = None
        for e in self.snapshot():
            if e.kind == "assigned":
                held = set(e.fields["partitions"])
            elif e.kind in ("revoked", "lost", "closed"):
                held = None
        return held

    def held(self) -> set[tuple[str, int]] | None:
        """(topic, partition)s held after the last assigned/revoked/lost event (None before any)."""
        held = None
        for e in self.snapshot():
            if e.kind in ("assigned", "revoked", "lost"):
                held = {(t, p) for t, p in e.fields["held"]}
        return held

    def changes(self, since: float = 0.0) -> list[Event]:
        """Assigned/revoked/lost events after `since` that moved at least one partition (the consumer
        protocol may call back with nothing to report)."""
        return [e for e in self.snapshot()
                if e.at > since and e.kind in ("assigned", "revoked", "lost") and e.fields["topics"]]

    def record_times(self, since: float = 0.0) -> list[float]:
        return [e.at for e in self.snapshot() if e.kind == "record" and e.at > since]

    def topic_records(self) -> list[tuple[str, int, int, str]]:
        """(topic, partition, offset, value) of every processed record, of every topic."""
        return [(e.fields["topic"], e.fields["partition"], e.fields["offset"], e.fields["value"])
                for e in self.snapshot() if e.kind == "record"]

    def generation(self) -> int | None:
        gens = [e.fields.get("generation") for e in self.snapshot() if e.kind == "assigned"]
        return gens[-1] if gens else None

    def is_own_record(self, e: Event) -> bool:
        """Whether `e` is a processed record of the member's topic."""
        return e.kind == "record" and (self.topic is None or e.fields.get("topic", self.topic) == self.topic)

    def records(self) -> list[tuple[int, int, str]]:
        """(partition, offset, value) of the processed records of the member's topic."""
        return [(e.fields["partition"], e.fields["offset"], e.fields["value"])
                for e in self.snapshot() if self.is_own_record(e)]

    def committed(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for e in self.snapshot():
            if e.kind == "committed":
                for p, o in e.fields["offsets"].items():
                    out[int(p)] = max(out.get(int(p), 0), o)
        return out

    def count(self, kind: str) -> int:
        return sum(1 for e in self.snapshot() if e.kind == kind)

    def first(self, kind: str) -> Event | None:
        return next((e for e in self.snapshot() if e.kind == kind), None)

    def describe(self) -> str:
        kinds = Counter(e.kind for e in self.snapshot())
        tail = [e.fields for e in self.snapshot() if e.kind != "record"][-12:]
        return (f"{self.name} (exit {self.proc.poll()}): {dict(kinds)}; last events {tail}; "
                f"stderr tail: {''.join(self.stderr_lines[-15:])}")

    # --- control ------------------------------------------------------------------------------

    def wait_for(self, predicate, what: str, timeout: float = WAIT_S):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                result = predicate(self)
                if result:
                    return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{self.name}: timed out waiting for {what}\n{self.describe()}")
                if self.proc.poll() is not None and not self._readers[0].is_alive():
                    raise AssertionError(f"{self.name}: exited while waiting for {what}\n{self.describe()}")
                self.cond.wait(min(remaining, 0.2))

    def close(self, timeout: float = WAIT_S) -> None:
        """Asks for a clean close (LeaveGroup for a dynamic member) and waits for the exit."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("close\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name}: did not close within {timeout}s\n{self.describe()}")
        for t in self._readers:
            t.join(timeout=10)
        assert code == 0, f"{self.name}: exited with {code}\n{self.describe()}"

    def kill(self) -> float:
        """SIGKILL: no LeaveGroup, no commit. Returns the time of the kill."""
        at = time.monotonic()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for t in self._readers:
            t.join(timeout=10)
        return at


class MemberFactory:
    """Starts members of one client kind; kills whatever is left on teardown."""

    def __init__(self, kind: str, java_classpath: str | None):
        self.kind = kind
        self.java_classpath = java_classpath
        self.members: list[Member] = []

    def start(self, name: str, bootstrap: str, topic: str, group: str, instance: str | None = None,
              session_ms: int = SESSION_MS, kind: str | None = None, protocol: str = "classic",
              regex: str | None = None, remote_assignor: str | None = None) -> Member:
        """Starts one member. `protocol="consumer"` selects KIP-848 (session_ms is then the broker's
        business and ignored); `regex` subscribes to a pattern instead of `topic`."""
        kind = kind or self.kind
        tail = [bootstrap, topic, group, instance or "-", str(session_ms)]
        if protocol != "classic":
            tail += ["--protocol", protocol]
        if regex is not None:
            tail += ["--regex", regex]
        if remote_assignor is not None:
            tail += ["--remote-assignor", remote_assignor]
        if kind == "java":
            argv = ["java", "-cp", self.java_classpath, "GroupMember", *tail]
        else:
            argv = [sys.executable, str(HERE / "group_member.py"), kind, *tail]
        suffix = "" if protocol == "classic" else f",{protocol}"
        member = Member(f"{name}[{kind}{suffix}]", argv, protocol=protocol, topic=topic)
        self.members.append(member)
        return member

    def cleanup(self) -> None:
        for m in self.members:
            if m.proc.poll() is None:
                m.kill()


def wait_stable(members: list[Member], partitions: int, timeout: float = WAIT_S,
                sizes: list[int] | None = None) -> dict[str, set[int]]:
    """Waits until every member holds an assignment and together they hold each partition once."""
    deadline = time.monotonic() + timeout
    while True:
        held = {m.name: m.assignment() for m in members}
        if all(h is not None for h in held.values()):
            flat = [p for h in held.values() for p in h]
            if sorted(flat) == list(range(partitions)):
                if sizes is None or sorted(len(h) for h in held.values()) == sorted(sizes):
                    return held
        if time.monotonic() > deadline:
            details = "\n".join(m.describe() for m in members)
            raise AssertionError(f"no stable assignment of {partitions} partitions within {timeout}s: {held}\n{details}")
        for m in members:
            if m.proc.poll() is not None:
                raise AssertionError(f"{m.name} exited while waiting for a stable assignment\n{m.describe()}")
        time.sleep(0.05)


class BackgroundProducer:
    """Produces `prefix-N` values round-robin over the partitions at a steady rate until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, prefix: str, rate_per_s: int = 300):
        self.topic = topic
        self.partitions = partitions
        self.prefix = prefix
        self.rate = rate_per_s
        self.acked: dict[tuple[int, int], str] = {}
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                   "enable.idempotence": True})
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._seq = 0
        self._thread.start()

    def _deliver(self, value: str):
        def cb(err, msg):
            if err is not None:
                self.failed.append(f"{value}: {err}")
            else:
                self.acked[(msg.partition(), msg.offset())] = value
        return cb

    def _run(self) -> None:
        start = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self._seq < due:
                value = f"{self.prefix}-{self._seq}"
                self._producer.produce(self.topic, value.encode(), partition=self._seq % self.partitions,
                                       on_delivery=self._deliver(value))
                self._seq += 1
            self._producer.poll(0.02)

    def acked_count(self) -> int:
        return len(self.acked)

    def stop(self) -> dict[tuple[int, int], str]:
        self._stop.set()
        self._thread.join()
        left = self._producer.flush(30)
        assert left == 0 and not self.failed, f"producer: {left} unsent, failures {self.failed[:5]}"
        assert len(self.acked) == self._seq
        return dict(self.acked)


def produce_batch(bootstrap: str, topic: str, partitions: int, prefix: str, per_partition: int) -> dict:
    """Produces per_partition records to each partition and returns {(partition, offset): value}."""
    acked: dict[tuple[int, int], str] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})

    def cb(err, msg):
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = msg.value().decode()

    for i in range(per_partition):
        for p in range(partitions):
            producer.produce(topic, f"{prefix}-{p}-{i}".encode(), partition=p, on_delivery=cb)
    assert producer.flush(30) == 0
    assert len(acked) == partitions * per_partition
    return acked


def wait_consumed(members: list[Member], expected: dict[tuple[int, int], str], timeout: float = WAIT_S) -> None:
    """Waits until the members together processed every expected (partition, offset)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = {(p, o) for m in members for p, o, _ in m.records()}
        missing = set(expected) - seen
        if not missing:
            return
        if time.monotonic() > deadline:
            details = "\n".join(m.describe() for m in members)
            raise AssertionError(f"{len(missing)} records never consumed, e.g. {sorted(missing)[:10]}\n{details}")
        time.sleep(0.1)


def check_exactly_once(members: list[Member], expected: dict[tuple[int, int], str],
                       allowed_duplicates: set[tuple[int, int]] = frozenset()) -> Counter:
    """Every expected record processed, with the right value, nothing else, and only the allowed
    (partition, offset)s more than once (then at most twice). Returns the duplicate counter."""
    counts: Counter = Counter()
    for m in members:
        for p, o, value in m.records():
            assert (p, o) in expected, f"{m.name} processed ({p}, {o}) = {value!r}, which was never produced"
            assert expected[(p, o)] == value, f"{m.name}: ({p}, {o}) is {value!r}, produced {expected[(p, o)]!r}"
            counts[(p, o)] += 1
    missing = set(expected) - set(counts)
    assert not missing, f"{len(missing)} records lost, e.g. {sorted(missing)[:10]}"
    dups = Counter({k: c for k, c in counts.items() if c > 1})
    unexpected = {k: c for k, c in dups.items() if k not in allowed_duplicates or c > 2}
    failures = [(m.name, e.fields) for m in members for e in m.snapshot() if e.kind == "commit_failed"]
    if unexpected:
        partition = min(unexpected)[0]
        raise AssertionError(f"{len(unexpected)} records processed more than once beyond the allowed "
                             f"{len(allowed_duplicates)}: e.g. {sorted(unexpected.items())[:10]}; "
                             f"commits failed: {failures[:5]}\n{partition_history(members, partition)}")
    assert not failures, f"commits failed: {failures[:5]}"
    return dups


def partition_history(members: list[Member], partition: int) -> str:
    """Who held, processed and committed `partition`, in time order: the members' assigned,
    revoked, lost and committed events that name it, their commit_failed, seek_failed and closed
    events, and each run of records of it one member processed (first and last offset), with
    times relative to the first event."""
    lines: list[tuple[float, str, str]] = []  # (time, member, text)
    for m in members:
        run: list[Event] = []

        def flush() -> None:
            if run:
                lines.append((run[0].at, m.name, f"processed offsets {run[0].fields['offset']}.."
                                         f"{run[-1].fields['offset']} ({len(run)} records over "
                                         f"{run[-1].at - run[0].at:.3f}s)"))
                run.clear()

        for e in m.snapshot():
            f = e.fields
            if e.kind == "record":
                if m.is_own_record(e) and f["partition"] == partition:
                    run.append(e)
                continue
            if e.kind in ("assigned", "revoked", "lost") and partition in f.get("partitions", []):
                flush()
                lines.append((e.at, m.name, f"{e.kind} {f['partitions']} (generation {f.get('generation')})"))
            elif e.kind == "committed" and str(partition) in f.get("offsets", {}):
                lines.append((e.at, m.name, f"committed {f['offsets'][str(partition)]}"))
            elif e.kind in ("commit_failed", "seek_failed", "closed"):
                flush()
                lines.append((e.at, m.name, f"{e.kind} {f.get('error', '')}"))
        flush()
    lines.sort()
    start = lines[0][0] if lines else 0.0
    # Commits after every poll are many: keep the first and last of each member's run of them.
    commits = [text.startswith("committed ") for _, _, text in lines]
    out = [f"  {at - start:8.3f}s {who} {text}" for i, (at, who, text) in enumerate(lines)
           if not (commits[i] and 0 < i < len(lines) - 1 and commits[i - 1] and commits[i + 1]
                   and lines[i - 1][1] == who == lines[i + 1][1])]
    return f"partition {partition}:\n" + "\n".join(out)


def longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest stretch in [start, end] without one of `times` (the ends count as bounds)."""
    inside = sorted(t for t in times if start < t < end)
    bounds = [start, *inside, end]
    return max(b - a for a, b in zip(bounds, bounds[1:]))


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets via OffsetFetch (librdkafka; this consumer never joins)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()


def described_member_hosts(bootstrap: str, group: str) -> list[str]:
    """The client host of each member as DescribeGroups reports it (sorted)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([group], request_timeout=30)[group].result(timeout=30)
    return sorted(m.host for m in description.members)
