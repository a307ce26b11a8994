"""Fair-service measurement shared by tests/clients/test_slow_consumer.py and
bench/slow_consumer_bench.py: normal fetchers read a fixed amount while, in alternate
runs, one client keeps sending large Fetch requests and never reads its socket.

The normal fetchers are raw Fetch loops (bench/rawfetch.py): cheap enough on two cores
that the broker, not the client, decides their pace. Each run reads the same bytes
(`passes` over every partition, one fetcher per partition, in threads), so a run's
throughput is comparable with every other run's; "without" and "with" runs alternate
and the medians are compared.
"""

from __future__ import annotations

import socket
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import rawfetch  # noqa: E402

from records import create_topic  # noqa: E402

RECORD_BYTES = 1024
RUN_TIMEOUT_S = 20.0  # one fetcher's pass, or any one socket wait


def prepare_topic(bootstrap: str, topic: str, partitions: int, bytes_per_partition: int) -> dict[int, int]:
    """Creates `topic` and fills each partition with 1 KiB records; returns the end offsets."""
    create_topic(bootstrap, topic, partitions)
    per_partition = bytes_per_partition // RECORD_BYTES
    producer = Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
        "queue.buffering.max.kbytes": 1 << 20, "acks": 1,
    })
    value = b"v" * RECORD_BYTES
    for i in range(per_partition):
        for p in range(partitions):
            while True:
                try:
                    producer.produce(topic, value=value, partition=p)
                    break
                except BufferError:
                    producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "records still queued"
    return {p: per_partition for p in range(partitions)}


@dataclass
class Run:
    with_slow: bool
    seconds: float
    bytes: int

    @property
    def mib_s(self) -> float:
        return self.bytes / self.seconds / (1 << 20)


def fetch_run(port: int, topic: str, ends: dict[int, int], passes: int, max_bytes: int) -> tuple[float, int]:
    """Every partition read `passes` times by its own fetcher thread; (seconds, bytes)."""
    results: list[rawfetch.FetchResult] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(partition: int) -> None:
        try:
            for _ in range(passes):
                r = rawfetch.fetch_all("127.0.0.1", port, topic, partition, ends[partition],
                                       max_bytes=max_bytes, timeout_s=RUN_TIMEOUT_S)
                if r.next_offset != ends[partition]:
                    raise rawfetch.FetchError(f"partition {partition} read to {r.next_offset}")
                with lock:
                    results.append(r)
        except BaseException as e:  # noqa: BLE001 - reported below
            with lock:
                errors.append(e)

    threads = [threading.Thread(target=one, args=(p,)) for p in ends]
    # rawfetch's sockets take the default timeout: a stalled broker fails the run, not hangs it.
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(RUN_TIMEOUT_S)
    try:
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
    finally:
        socket.setdefaulttimeout(previous)
    if errors:
        raise errors[0]
    return seconds, sum(r.bytes_received for r in results)


class SlowReader:
    """A client that sends `requests` pipelined whole-partition Fetches of up to
    `max_bytes` each and never reads its socket (a receive buffer of a few KiB)."""

    def __init__(self, port: int, topic: str, partition: int, requests: int = 20, max_bytes: int = 50 << 20):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", port))
        frames = b"".join(rawfetch.encode_fetch(i + 1, topic, partition, 0, max_bytes) for i in range(requests))
        self.sock.setblocking(False)
        self.unsent = memoryview(frames)
        self.push()

    def push(self) -> None:
        """Sends what the socket takes now (the broker may have stopped reading)."""
        while self.unsent:
            try:
                n = self.sock.send(self.unsent)
            except BlockingIOError:
                return
            self.unsent = self.unsent[n:]

    def close(self) -> None:
        self.sock.close()


def alternate(port: int, topic: str, ends: dict[int, int], pairs: int, passes: int,
              max_bytes: int = 1 << 20, slow_partition: int = 0) -> list[Run]:
    """`pairs` x (a run without the slow reader, a run with one), after one warm-up run."""
    fetch_run(port, topic, ends, 1, max_bytes)  # page cache, connections, JIT-free warm-up
    runs: list[Run] = []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        for with_slow in order:
            slow = SlowReader(port, topic, slow_partition) if with_slow else None
            try:
                seconds, nbytes = fetch_run(port, topic, ends, passes, max_bytes)
                if slow:
                    slow.push()
            finally:
                if slow:
                    slow.close()
            runs.append(Run(with_slow, seconds, nbytes))
    return runs


def ratio(runs: list[Run]) -> tuple[float, float, float]:
    """(median MiB/s without, median MiB/s with, with / without)."""
    without = statistics.median(r.mib_s for r in runs if not r.with_slow)
    with_slow = statistics.median(r.mib_s for r in runs if r.with_slow)
    return without, with_slow, with_slow / without


def best_ratio(runs: list[Run]) -> tuple[float, float, float]:
    """(best MiB/s without, best MiB/s with, with / without): load from outside the test only
    ever slows a run, so the best runs compare what the broker can do on each side."""
    without = max(r.mib_s for r in runs if not r.with_slow)
    with_slow = max(r.mib_s for r in runs if r.with_slow)
    return without, with_slow, with_slow / without
