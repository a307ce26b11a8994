"""Many connections: 1,000 producer connections at a modest rate each, against the same total
rate from 10 connections, plus the broker's memory per idle connection.

Run through scripts/bench-connections.sh. One release `strata serve` on a temporary log dir
(`max.connections` raised to fit). Phases, in one run:

- idle: the broker's RSS before and after IDLE connections that each had one ApiVersions
  answered and then stay silent; reported as KiB per idle connection.
- many / few: CONNS (default 1,000) or BASELINE_CONNS (default 10) connections produce RATE
  records/s in total (default 20,000: 20 a second per connection of the 1,000) of 1 KiB each,
  one record per Produce request, acks=1, across PARTITIONS partitions, for SECONDS. Requests
  are pre-encoded (one v2 batch per partition, built once with kafka-python's builder; the
  broker assigns offsets) and sent on a fixed schedule from WORKERS processes running asyncio
  (open loop: a request goes out at its time even if earlier answers are outstanding, so Kafka's
  in-order answers pipeline). Latency runs from a request's scheduled time to its answer, so a
  client that falls behind is counted, not hidden. Reported: answered records/s, p50/p99/p99.9
  latency, errors, the broker's RSS at the end and its CPU (utime + stime over wall time).

The two produce phases alternate ROUNDS times (few, many, many, few, ...) and the table shows
each phase's median round. Python sends from the same two cores the broker runs on: the
clients' own cost is part of the latency, equally in both phases.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import resource
import socket
import statistics
import struct
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from broker import StrataBroker  # noqa: E402

TOPIC = "conns"
PRODUCE_VERSION = 7  # non-flexible: fixed-width header, plain arrays
RECORD = 1024


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def batch_bytes() -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    b.append(0, int(time.time() * 1000), None, b"r" * RECORD, [])
    return bytes(b.build())


def produce_body(partition: int, batch: bytes) -> bytes:
    """A Produce v7 body after the correlation id (acks=1, one partition, one batch)."""
    return b"".join([
        _string("strata-conns-bench"),
        struct.pack(">h", -1),  # transactional_id: null
        struct.pack(">hi", 1, 30_000),  # acks, timeout_ms
        struct.pack(">i", 1), _string(TOPIC),
        struct.pack(">ii", 1, partition), struct.pack(">i", len(batch)), batch,
    ])


def frame(correlation_id: int, body: bytes) -> bytes:
    head = struct.pack(">hhi", 0, PRODUCE_VERSION, correlation_id)
    return struct.pack(">i", len(head) + len(body)) + head + body


def _error_code(payload: bytes) -> int:
    """The partition error code of a one-partition Produce v7 answer (after the size)."""
    pos = 4 + 4  # correlation id, topics array length
    (name_len,) = struct.unpack_from(">h", payload, pos)
    pos += 2 + name_len + 4 + 4  # name, partitions array length, index
    (code,) = struct.unpack_from(">h", payload, pos)
    return code


# --- one load process -----------------------------------------------------------------------

async def _connection(port: int, bodies: list[bytes], interval: float, start: float, until: float,
                      latencies: list[float], errors: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent: deque[float] = deque()
    stop = asyncio.Event()

    async def read_answers() -> None:
        while not (stop.is_set() and not sent):
            head = await reader.readexactly(4)
            payload = await reader.readexactly(struct.unpack(">i", head)[0])
            due = sent.popleft()
            latencies.append(time.perf_counter() - due)
            if _error_code(payload) != 0:
                errors[0] += 1

    answers = asyncio.create_task(read_answers())
    corr, due = 0, start + random.random() * interval  # spread the connections' phases
    while due < until:
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        corr += 1
        sent.append(due)
        writer.write(frame(corr, bodies[corr % len(bodies)]))
        due += interval
    stop.set()
    if not sent:
        answers.cancel()
    try:
        await asyncio.wait_for(answers, timeout=30)
    except asyncio.CancelledError:
        pass
    finally:
        writer.close()


def load_process(port: int, conns: int, rate_per_conn: float, seconds: float, partitions: int,
                 start_at: float, out: mp.Queue) -> None:
    batch = batch_bytes()
    bodies = [produce_body(p, batch) for p in range(partitions)]

    async def main() -> tuple[list[float], int]:
        latencies: list[float] = []
        errors = [0]
        interval = 1.0 / rate_per_conn
        now = time.perf_counter()
        start = now + max(0.0, start_at - time.time())
        # Warm-up second excluded: connections open and settle first.
        tasks = [asyncio.create_task(_connection(port, bodies, interval, start, start + seconds,
                                                 latencies, errors)) for _ in range(conns)]
        await asyncio.gather(*tasks)
        return latencies, errors[0]

    latencies, errors = asyncio.run(main())
    out.put((latencies, errors))


# --- the broker side ------------------------------------------------------------------------

def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_phase(broker: StrataBroker, conns: int, rate: float, seconds: float, partitions: int,
                  workers: int) -> dict:
    workers = min(workers, conns)
    out: mp.Queue = mp.Queue()
    start_at = time.time() + 1.0 + conns / 2000  # time to connect
    procs = []
    for w in range(workers):
        n = conns // workers + (1 if w < conns % workers else 0)
        p = mp.Process(target=load_process, args=(broker.port, n, rate / conns, seconds, partitions,
                                                  start_at, out))
        p.start()
        procs.append(p)
    pid = broker.process.pid
    while time.time() < start_at:
        time.sleep(0.01)
    cpu0, wall0 = cpu_seconds(pid), time.perf_counter()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    cpu1, wall1 = cpu_seconds(pid), time.perf_counter()
    for p in procs:
        p.join()
    latencies = sorted(x for r in results for x in r[0])
    errors = sum(r[1] for r in results)

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "connections": conns,
        "offered_per_s": rate,
        "answered_per_s": len(latencies) / seconds,
        "p50_ms": pct(0.50), "p99_ms": pct(0.99), "p999_ms": pct(0.999),
        "errors": errors,
        "rss_mib": rss_kib(pid) / 1024,
        "cpu_percent": 100 * (cpu1 - cpu0) / (wall1 - wall0),
    }


def _api_versions(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, correlation_id, -1)
    return struct.pack(">i", len(body)) + body


def idle_phase(broker: StrataBroker, count: int) -> dict:
    pid = broker.process.pid
    time.sleep(1.0)  # let the allocator settle after startup
    before = rss_kib(pid)
    socks = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", broker.port))
        s.sendall(_api_versions(i))
        socks.append(s)
    for s in socks:  # every one answered: accepted, served once, now idle
        size = struct.unpack(">i", _recv(s, 4))[0]
        _recv(s, size)
    time.sleep(1.0)
    after = rss_kib(pid)
    for s in socks:
        s.close()
    return {"connections": count, "rss_before_mib": before / 1024, "rss_after_mib": after / 1024,
            "kib_per_connection": (after - before) / count}


def _recv(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise RuntimeError("broker closed an idle connection")
        data += chunk
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--conns", type=int, default=1000)
    parser.add_argument("--baseline-conns", type=int, default=10)
    parser.add_argument("--rate", type=float, default=20_000, help="records/s in total")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=2, help="(few, many) pairs, alternating")
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2, help="load processes")
    parser.add_argument("--idle", type=int, default=5000, help="idle connections (0: skip)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.idle + args.conns + 1000
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    results: dict = {"load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="strata-conns-bench-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out",
                              {"max.connections": str(need), "num.partitions": str(args.partitions)})
        broker.start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(timeout=30)
            if args.idle:
                results["idle"] = idle_phase(broker, args.idle)
            rounds: dict[str, list[dict]] = {"few": [], "many": []}
            for r in range(args.rounds):
                order = ("few", "many") if r % 2 == 0 else ("many", "few")
                for phase in order:
                    conns = args.conns if phase == "many" else args.baseline_conns
                    res = produce_phase(broker, conns, args.rate, args.seconds, args.partitions,
                                        args.workers)
                    rounds[phase].append(res)
                    print(f"round {r} {phase:<4} {json.dumps(res)}", file=sys.stderr, flush=True)
            for phase, runs in rounds.items():
                runs.sort(key=lambda x: x["p99_ms"])
                results[phase] = runs[len(runs) // 2]
                results[phase + "_rounds"] = runs
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            broker.stop()

    print(f"load average at start {results['load_average']:.2f}")
    if "idle" in results:
        i = results["idle"]
        print(f"idle: {i['connections']} connections, broker RSS {i['rss_before_mib']:.1f} -> "
              f"{i['rss_after_mib']:.1f} MiB = {i['kib_per_connection']:.1f} KiB per idle connection")
    print(f"{'phase':<6} {'conns':>6} {'offered/s':>10} {'answered/s':>11} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'p99.9 ms':>9} {'errors':>7} {'RSS MiB':>8} {'CPU %':>6}")
    for phase in ("few", "many"):
        x = results[phase]
        print(f"{phase:<6} {x['connections']:>6} {x['offered_per_s']:>10,.0f} {x['answered_per_s']:>11,.0f} "
              f"{x['p50_ms']:>8.2f} {x['p99_ms']:>8.2f} {x['p999_ms']:>9.2f} {x['errors']:>7} "
              f"{x['rss_mib']:>8.1f} {x['cpu_percent']:>6.0f}")
    many, few = results["many"], results["few"]
    print(f"many / few: throughput {many['answered_per_s'] / few['answered_per_s']:.2f}, "
          f"p99 {many['p99_ms'] / few['p99_ms']:.2f}x, CPU {many['cpu_percent'] / max(few['cpu_percent'], 1e-9):.2f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
