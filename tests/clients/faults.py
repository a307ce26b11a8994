"""The replication fault suite's library: a proxied cluster, a Jepsen-like workload and the faults.

- `FaultCluster`: N brokers in cluster mode on one etcd, each behind its own `CutProxy` (the
  broker advertises the proxy, so clients and the other brokers' replica fetchers reach it only
  through it) and reaching etcd through a second, raw one. One broker may keep its log dir on a
  loop-mounted ext4 file system (`LoopDisk`) that can be filled to ENOSPC.
- `Workload`: idempotent confluent-kafka producers (acks=all) in threads, each writing unique
  values `<producer>.<incarnation>:<seq>` round robin over the partitions and recording every
  delivery report: acknowledged (partition, offset) or failed (error).
- `Faults`: faults chosen at random from a seeded `random.Random` and healed one at a time:
  SIGKILL of a partition's leader, of a follower, of the controller (each restarted on its data
  dir and port), SIGSTOP/SIGCONT (a GC-like pause), a cut (the broker's proxy closes and
  blackholes everything, its replica fetchers are refused at the others' proxies), an isolation
  (a cut plus its etcd connection, so its lease lapses), and a full disk. After each heal the
  cluster must list every broker and show every partition with a leader within a bound.

The checker that reads everything back is in `fault_checker.py`. No test is defined here.
"""

from __future__ import annotations

import errno
import os
import random
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker import BrokerError, StrataBroker
from cluster import CLUSTER_SETTINGS, Metadata, StrataCluster, metadata, wait_until
from cut_proxy import CutProxy

# Replication settings every fault-suite broker runs with (Kafka's names). A broker that does not
# know one keeps it with a WARN, so the same settings serve before and after replication.
REPLICATION_SETTINGS = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "unclean.leader.election.enable": "false",
}
HEAL_TIMEOUT_S = 45.0
ADMIN_TIMEOUT_S = 30.0
# The client ids a broker's replica fetcher introduces itself with: Strata's
# "strata-replica-fetcher-<id>" and Kafka's "broker-<id>-fetcher-<n>". A cut refuses, at the other
# brokers' proxies, connections whose client id names the cut broker.
FETCHER_CLIENT_IDS = (re.compile(r"replica-fetcher-(\d+)$"), re.compile(r"^broker-(\d+)-fetcher"))


def fetcher_node(client_id: str) -> int | None:
    """The broker whose replica fetcher uses this client id, if it is one."""
    for pattern in FETCHER_CLIENT_IDS:
        if m := pattern.search(client_id):
            return int(m.group(1))
    return None

KILL_LEADER, KILL_FOLLOWER, KILL_CONTROLLER = "kill_leader", "kill_follower", "kill_controller"
PAUSE, CUT, ISOLATE, DISK_FULL, RESTART = "pause", "cut", "isolate", "disk_full", "restart"
ALL_KINDS = (KILL_LEADER, KILL_FOLLOWER, KILL_CONTROLLER, PAUSE, CUT, ISOLATE, DISK_FULL, RESTART)


def kinds_for(replication_factor: int, disk: bool) -> tuple[str, ...]:
    """The fault kinds that mean something for this setup: a follower exists only with replicas,
    a full disk only with a loop-mounted log dir."""
    return tuple(k for k in ALL_KINDS
                 if (k != KILL_FOLLOWER or replication_factor > 1) and (k != DISK_FULL or disk))


# --- a log dir that can fill up --------------------------------------------------------------

class DiskUnavailable(RuntimeError):
    """The loop-mounted file system could not be set up (the reason is the message)."""


class LoopDisk:
    """A sparse image file formatted ext4 (no reserved blocks) and loop-mounted at `mount_point`.

    The broker's log dir is `log_dir` inside it (the mount's root holds ext4's lost+found, which a
    log dir must not). `fill()` takes every free block with a ballast file, `free()` removes it.
    """

    def __init__(self, image: Path, mount_point: Path, size_mb: int = 512):
        self.image = image
        self.mount_point = mount_point
        self.size_mb = size_mb
        self.mounted = False

    @property
    def log_dir(self) -> Path:
        return self.mount_point / "data"

    @property
    def ballast(self) -> Path:
        return self.mount_point / "ballast"

    def mount(self) -> "LoopDisk":
        self.mount_point.mkdir(parents=True, exist_ok=True)
        with open(self.image, "wb") as f:
            f.truncate(self.size_mb << 20)
        for cmd in (["mkfs.ext4", "-q", "-F", "-m", "0", str(self.image)],
                    ["mount", "-o", "loop", str(self.image), str(self.mount_point)]):
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise DiskUnavailable(f"{' '.join(cmd)}: {e}") from e
            if proc.returncode != 0:
                raise DiskUnavailable(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
        self.mounted = True
        self.log_dir.mkdir(exist_ok=True)
        return self

    def fill(self) -> int:
        """Takes every free block; returns the ballast's size in bytes."""
        fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            st = os.statvfs(self.mount_point)
            try:
                os.posix_fallocate(fd, os.fstat(fd).st_size, max(st.f_bavail * st.f_frsize - (1 << 20), 1))
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
            for chunk in (1 << 16, 1 << 12, 1 << 9):
                block = b"\0" * chunk
                try:
                    while True:
                        os.write(fd, block)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
            os.fsync(fd)
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def free(self) -> None:
        self.ballast.unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.mount_point)], capture_output=True, timeout=60)
            if subprocess.run(["mountpoint", "-q", str(self.mount_point)]).returncode == 0:
                subprocess.run(["umount", "-l", str(self.mount_point)], capture_output=True, timeout=60)
            self.mounted = False
        self.image.unlink(missing_ok=True)


# --- the cluster ------------------------------------------------------------------------------

@dataclass
class Node:
    node_id: int
    broker: StrataBroker
    proxy: CutProxy        # the advertised address: clients and peers come through it
    etcd_proxy: CutProxy   # the broker's only way to etcd
    disk: LoopDisk | None = None
    paused: bool = False
    cut: bool = False
    full: bool = False

    @property
    def healthy(self) -> bool:
        return self.broker.running() and not (self.paused or self.cut or self.full)


#: make_broker(settings, log_dir or None) -> a StrataBroker not yet started, with keep_port=True
#: (conftest's broker_factory fits).
BrokerMaker = Callable[[dict[str, str], "Path | None"], StrataBroker]


class FaultCluster:
    """Brokers 1..count on one etcd (endpoint `http://127.0.0.1:<port>`) under `prefix`."""

    def __init__(self, make_broker: BrokerMaker, etcd_endpoint: str, prefix: str, count: int = 3,
                 disk: LoopDisk | None = None, overrides: dict[str, str] | None = None):
        etcd_port = int(etcd_endpoint.rsplit(":", 1)[1])
        self.nodes: dict[int, Node] = {}
        for node_id in range(1, count + 1):
            holder: dict[str, StrataBroker] = {}
            proxy = CutProxy(lambda h=holder: h["broker"].port, f"broker-{node_id}")
            etcd_proxy = CutProxy(lambda: etcd_port, f"etcd-for-{node_id}", kafka=False)
            settings = {
                "node.id": str(node_id),
                "advertised.listeners": f"PLAINTEXT://{proxy.address}",
                "strata.metadata.etcd.endpoints": f"http://{etcd_proxy.address}",
                "strata.metadata.etcd.prefix": prefix,
                **CLUSTER_SETTINGS,
                **REPLICATION_SETTINGS,
                **(overrides or {}),
            }
            node_disk = disk if node_id == count else None
            b = make_broker(settings, node_disk.log_dir if node_disk else None)
            holder["broker"] = b
            self.nodes[node_id] = Node(node_id, b, proxy, etcd_proxy, node_disk)
        self.cluster = StrataCluster({n: node.broker for n, node in self.nodes.items()}, etcd_endpoint, prefix)

    def start(self) -> "FaultCluster":
        for node in self.nodes.values():  # together: a broker may wait for its peers
            node.broker.spawn()
        for node in self.nodes.values():
            node.broker.wait_ready()
        self.cluster.wait_for_members()
        return self

    @property
    def bootstrap(self) -> str:
        """The proxies' addresses: what a client is given."""
        return ",".join(node.proxy.address for node in self.nodes.values())

    def healthy(self, avoid: set[int] = frozenset()) -> list[Node]:
        return [n for n in self.nodes.values() if n.healthy and n.node_id not in avoid]

    def metadata(self, topic: str) -> tuple[int, Metadata]:
        """What some healthy broker says now (asked directly, not through its proxy)."""
        for node in self.healthy():
            try:
                return node.node_id, metadata(node.broker.bootstrap, [topic])
            except OSError:
                continue
        raise AssertionError("no healthy broker answers Metadata")

    def create_topic(self, topic: str, partitions: int, replication_factor: int, min_insync: int) -> None:
        """CreateTopics through the admin client (raises KafkaException with the broker's error,
        e.g. INVALID_REPLICATION_FACTOR where replication is not available)."""
        client = AdminClient({"bootstrap.servers": self.bootstrap})
        new = NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor,
                       config={"min.insync.replicas": str(min_insync)})
        client.create_topics([new], operation_timeout=ADMIN_TIMEOUT_S)[topic].result(timeout=ADMIN_TIMEOUT_S)
        self.wait_led(topic, partitions, HEAL_TIMEOUT_S)

    def wait_led(self, topic: str, partitions: int, timeout_s: float, full_isr: bool = False) -> float:
        """Waits until every broker is registered and every healthy broker shows each partition
        with a live leader (and, `full_isr`, an ISR of all its replicas); returns the seconds taken."""
        start = time.monotonic()
        everyone = set(self.nodes)

        def led() -> bool:
            for node in self.healthy():
                md = metadata(node.broker.bootstrap, [topic])
                if set(md.brokers) != everyone or md.controller_id not in everyone:
                    return False
                parts = md.topics[topic].partitions
                if len(parts) != partitions:
                    return False
                for info in parts.values():
                    if info.leader not in everyone:
                        return False
                    if full_isr and set(info.isr) != set(info.replicas):
                        return False
            return True

        what = "every partition's ISR to be full" if full_isr else "every partition to have a leader"
        wait_until(led, timeout_s, f"{what} ({topic})", interval_s=0.2)
        return time.monotonic() - start

    # --- acting on one node ----------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].broker.kill()

    def restart(self, node_id: int) -> None:
        """Starts a stopped or killed broker again on its data dir and port."""
        b = self.nodes[node_id].broker
        if not b.running():
            b.start()

    def pause(self, node_id: int) -> None:
        node = self.nodes[node_id]
        os.kill(node.broker.process.pid, signal.SIGSTOP)
        node.paused = True

    def resume(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.paused and node.broker.running():
            os.kill(node.broker.process.pid, signal.SIGCONT)
        node.paused = False

    def cut(self, node_id: int, etcd: bool = False) -> None:
        """Cuts the broker off from clients and peers (both directions), and from etcd if asked."""
        node = self.nodes[node_id]
        node.cut = True
        node.proxy.cut()
        for other in self.nodes.values():
            if other.node_id != node_id:
                other.proxy.ban(lambda client_id: fetcher_node(client_id) == node_id)
        if etcd:
            node.etcd_proxy.cut()

    def uncut(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.proxy.heal()
        node.etcd_proxy.heal()
        for other in self.nodes.values():
            if other.node_id != node_id:
                other.proxy.unban()
        node.cut = False

    def heal_all(self) -> None:
        """Every fault undone: resumed, reconnected, space freed, every broker running."""
        for node in self.nodes.values():
            self.resume(node.node_id)
            if node.cut:
                self.uncut(node.node_id)
            if node.full:
                node.disk.free()
                node.full = False
                stop_or_kill(node.broker)
        for node in self.nodes.values():
            self.restart(node.node_id)

    def close(self) -> None:
        """Resumes paused brokers (a stopped process ignores SIGTERM) and closes the proxies; the
        brokers themselves belong to whoever made them."""
        for node in self.nodes.values():
            try:
                self.resume(node.node_id)
            except ProcessLookupError:
                pass
            node.proxy.close()
            node.etcd_proxy.close()


# --- the workload -----------------------------------------------------------------------------

PRODUCER_CONFIG = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    # Longer than any schedule's outage: a record is acknowledged or still retried, not given up.
    "message.timeout.ms": 300_000,
    "request.timeout.ms": 10_000,
    "retry.backoff.ms": 50,
    "retry.backoff.max.ms": 500,
    "reconnect.backoff.max.ms": 500,
    "topic.metadata.refresh.interval.ms": 2_000,
    "log_level": 4,  # warnings and worse: every fault disconnects, and librdkafka says so at info
}
# STRATA_FAULTS_CLIENT_DEBUG=eos (any librdkafka `debug` contexts) traces the producers' idempotence
# decisions (epoch bumps, duplicate and out-of-order sequence answers) into the test's output.
if os.environ.get("STRATA_FAULTS_CLIENT_DEBUG"):
    PRODUCER_CONFIG.update(debug=os.environ["STRATA_FAULTS_CLIENT_DEBUG"], log_level=7)


@dataclass
class Ack:
    partition: int
    offset: int | None  # None: librdkafka reported success without an offset


@dataclass
class ProducerLog:
    """One producer's delivery reports (written by its own thread only)."""

    name: str
    sent: int = 0
    acked: dict[str, Ack] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    fatal: list[str] = field(default_factory=list)
    incarnations: int = 1
    unresolved: int = 0  # neither acknowledged nor failed when the workload stopped


class Workload:
    """`producers` threads, each an idempotent producer sending `rate` records/s round robin over
    the topic's partitions with at most `max_in_flight` unresolved, until `stop()`.

    A producer that hits a fatal error (librdkafka gives up its producer id) is replaced by a new
    incarnation: its values stay unique and each incarnation's sequence is checked on its own.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, producers: int = 3, rate: float = 300.0,
                 max_in_flight: int = 2_000):
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.max_in_flight = max_in_flight
        self.logs = [ProducerLog(f"p{i}") for i in range(producers)]
        self.flush_timeout_s = 120.0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(log,), name=f"workload-{log.name}", daemon=True)
                         for log in self.logs]
        self.errors: list[BaseException] = []

    def start(self) -> "Workload":
        for t in self._threads:
            t.start()
        return self

    def acknowledged(self) -> int:
        return sum(len(log.acked) for log in self.logs)

    def stop(self, flush_timeout_s: float = 120.0) -> None:
        """Stops sending; each producer flushes what it has (bounded) and closes."""
        self.flush_timeout_s = flush_timeout_s
        self._stop.set()
        for t in self._threads:
            t.join(flush_timeout_s + 30)
        if self.errors:
            raise AssertionError(f"a workload thread failed: {self.errors[0]!r}") from self.errors[0]

    def _producer(self, log: ProducerLog, fatal: threading.Event) -> Producer:
        def on_error(err: KafkaError) -> None:
            if err.fatal():
                log.fatal.append(str(err))
                fatal.set()

        return Producer({"bootstrap.servers": self.bootstrap, "client.id": f"faults-{log.name}",
                         "error_cb": on_error, **PRODUCER_CONFIG})

    def _run(self, log: ProducerLog) -> None:
        try:
            self._produce(log)
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.errors.append(e)

    def _produce(self, log: ProducerLog) -> None:
        fatal = threading.Event()
        producer = self._producer(log, fatal)
        outstanding = 0
        seq = 0

        def on_delivery(err, msg) -> None:
            nonlocal outstanding
            outstanding -= 1
            value = msg.value().decode()
            if err is None:
                log.acked[value] = Ack(msg.partition(), msg.offset())
            else:
                log.failed[value] = str(err)

        interval = 1.0 / self.rate
        next_send = time.monotonic()
        while not self._stop.is_set():
            if fatal.is_set():
                # The old producer's records are resolved (or never will be) as it is dropped.
                producer.flush(5)
                log.incarnations += 1
                fatal = threading.Event()
                producer = self._producer(log, fatal)
                outstanding = 0
                seq = 0
            now = time.monotonic()
            if outstanding >= self.max_in_flight or now < next_send:
                producer.poll(min(max(next_send - now, 0.001), 0.05))
                continue
            value = f"{log.name}.{log.incarnations}:{seq}"
            try:
                producer.produce(self.topic, value.encode(), partition=seq % self.partitions,
                                 on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.05)
                continue
            except KafkaException as e:
                log.failed[value] = str(e)
                continue
            outstanding += 1
            log.sent += 1
            seq += 1
            next_send += interval
            producer.poll(0)
        producer.flush(self.flush_timeout_s)
        log.unresolved = outstanding


# --- the faults -------------------------------------------------------------------------------

@dataclass
class FaultEvent:
    kind: str
    node: int
    detail: str
    seconds: float         # injection to heal
    recovery_s: float      # heal to every partition led again (-1: not within the bound)


@dataclass
class FaultLog:
    seed: int
    events: list[FaultEvent] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    # What a fault showed that is wrong in itself: a broker that did not exit 0 on SIGTERM.
    anomalies: list[str] = field(default_factory=list)

    def by_kind(self) -> Counter:
        return Counter(e.kind for e in self.events)

    @property
    def unhealed(self) -> int:
        return sum(1 for e in self.events if e.recovery_s < 0)


class Faults:
    """Injects `count` faults of the given kinds, one at a time, each healed before the next."""

    def __init__(self, fc: FaultCluster, topic: str, partitions: int, kinds: tuple[str, ...], seed: int,
                 log: Callable[[str], None] = print):
        self.fc = fc
        self.topic = topic
        self.partitions = partitions
        self.kinds = kinds
        self.rng = random.Random(seed)
        self.faults = FaultLog(seed)
        self.log = log

    def run(self, count: int, deadline: float | None = None) -> FaultLog:
        while len(self.faults.events) < count:
            if deadline is not None and time.monotonic() > deadline:
                self.log(f"faults: deadline reached after {len(self.faults.events)} faults")
                break
            self.one(self.rng.choice(self.kinds))
            time.sleep(self.rng.uniform(0.3, 1.5))  # the workload runs between faults
        return self.faults

    def one(self, kind: str) -> FaultEvent | None:
        target = self._target(kind)
        if target is None:
            self.faults.skipped[kind] += 1
            return None
        node, detail = target
        # Wall-clock UTC, as the brokers' log lines: a finding is traced through both.
        at = time.strftime("%H:%M:%S", time.gmtime())
        start = time.monotonic()
        note = getattr(self, f"_{kind}")(node)
        if note:
            detail = f"{detail}, {note}"
        seconds = time.monotonic() - start
        try:
            recovery = self.fc.wait_led(self.topic, self.partitions, HEAL_TIMEOUT_S)
        except AssertionError as e:
            self.log(f"faults: not healed in time after {kind} of {node}: {e}")
            recovery = -1.0
        event = FaultEvent(kind, node, detail, round(seconds, 2), round(recovery, 2))
        self.faults.events.append(event)
        self.log(f"{at} fault {len(self.faults.events):>3}: {kind:<15} broker {node} {detail:<34} "
                 f"held {event.seconds:5.2f}s, all partitions led {event.recovery_s:5.2f}s later")
        return event

    def _target(self, kind: str) -> tuple[int, str] | None:
        """The broker a fault hits, chosen from what a healthy broker says now."""
        _, md = self.fc.metadata(self.topic)
        parts = md.topics[self.topic].partitions
        p = self.rng.randrange(self.partitions)
        info = parts.get(p)
        if kind == KILL_LEADER:
            return (info.leader, f"leader of p{p}") if info and info.leader in self.fc.nodes else None
        if kind == KILL_FOLLOWER:
            followers = [r for r in (info.isr if info else []) if r != info.leader and r in self.fc.nodes]
            return (self.rng.choice(followers), f"follower of p{p}") if followers else None
        if kind == KILL_CONTROLLER:
            return (md.controller_id, "controller") if md.controller_id in self.fc.nodes else None
        if kind == DISK_FULL:
            disks = [n.node_id for n in self.fc.nodes.values() if n.disk is not None]
            return (disks[0], "log dir full") if disks else None
        node = self.rng.choice(sorted(self.fc.nodes))
        led = [f"p{q}" for q, i in sorted(parts.items()) if i.leader == node]
        return node, "leads " + (",".join(led) or "nothing")

    # --- one method per kind: inject, hold, heal; may return a note on what happened --------

    def _kill_and_restart(self, node: int) -> None:
        self.fc.kill(node)
        time.sleep(self.rng.uniform(0.0, 2.0))
        self.fc.restart(node)

    _kill_leader = _kill_follower = _kill_controller = _kill_and_restart

    def _pause(self, node: int) -> None:
        # Sometimes past the session timeout: the lease lapses while the broker is frozen.
        self.fc.pause(node)
        time.sleep(self.rng.uniform(0.5, 5.0))
        self.fc.resume(node)

    def _cut(self, node: int, etcd: bool = False) -> str:
        others = [n.proxy for n in self.fc.nodes.values() if n.node_id != node]
        before = sum(p.refused_banned for p in others)
        self.fc.cut(node, etcd)
        time.sleep(self.rng.uniform(1.0, 6.0 if etcd else 5.0))
        refused = sum(p.refused_banned for p in others) - before
        self.fc.uncut(node)
        return f"{refused} fetcher conns refused"

    def _isolate(self, node: int) -> str:
        return self._cut(node, etcd=True)

    def _restart(self, node: int) -> str:
        # A clean restart: SIGTERM is Kafka's controlled shutdown (leadership moves first).
        b = self.fc.nodes[node].broker
        start = time.monotonic()
        code = stop_or_kill(b)
        took = time.monotonic() - start
        if code != 0:
            what = "hung on SIGTERM and was killed" if code is None else f"exited {code} on SIGTERM"
            self.faults.anomalies.append(f"broker {node} {what}")
        time.sleep(self.rng.uniform(0.0, 1.0))
        self.fc.restart(node)
        return f"stopped in {took:.2f}s"

    def _disk_full(self, node: int) -> None:
        n = self.fc.nodes[node]
        n.disk.fill()
        n.full = True
        # Until the broker's next write fails (its dir goes offline), bounded.
        deadline = time.monotonic() + 8.0
        while not (hit := b"No space left on device" in _last_output(n.broker)) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(self.rng.uniform(0.0, 1.0))
        n.disk.free()
        n.full = False
        # An offline dir stays offline until restart (fail stop); the broker may also have exited.
        stop_or_kill(n.broker)
        self.fc.restart(node)
        return "ENOSPC hit" if hit else "no write failed within 8 s"


def stop_or_kill(b: StrataBroker) -> int | None:
    """SIGTERM; the exit code, or None when the broker hung and was killed."""
    try:
        return b.stop()
    except BrokerError:
        return None


def _last_output(b: StrataBroker) -> bytes:
    try:
        return b.output_files[-1].read_bytes()
    except (OSError, IndexError):
        return b""
