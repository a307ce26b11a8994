#!/usr/bin/env bash
# What the Prometheus metrics cost (not part of scripts/test.sh; issue 18 asks for <= 3% of
# produce and consume throughput). Builds a release broker (STRATA_BIN skips the build), starts
# two `strata serve` on free loopback ports - one with `strata.metrics.listener` and a scraper
# reading /metrics every SCRAPE_S seconds (as Prometheus would, but more often than the usual
# 15 s), one without - and runs ROUNDS rounds, each producing COUNT records of SIZE bytes to a new
# 3-partition topic with confluent-kafka (librdkafka; acks=all, lz4 off) and consuming them back,
# against both brokers in alternating order. Prints every run, then per side the median produce
# and consume throughput (MB/s), the broker's CPU seconds per GB (from /proc/<pid>/stat; the
# steadier measure of what metrics cost), and the ratios metrics-on / metrics-off.
# Settings: COUNT (default 300000), SIZE (default 512), ROUNDS (default 5), SCRAPE_S (default 1),
# BENCH_DIR (where the brokers' log dirs go; /dev/shm takes the disk's noise out of the ratio).
# Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
export COUNT=${COUNT:-300000} SIZE=${SIZE:-512} ROUNDS=${ROUNDS:-5} SCRAPE_S=${SCRAPE_S:-1}
PY=.test-deps/venv/bin/python

if [ ! -x "$PY" ]; then
  scripts/install-test-deps.sh
fi
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi
export STRATA_BIN

exec "$PY" - <<'PYEOF'
import os, shutil, statistics, subprocess, sys, tempfile, threading, time, urllib.request, uuid
sys.path.insert(0, "tests/clients")
from broker import free_port, port_accepts
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

COUNT, SIZE, ROUNDS, SCRAPE_S = (int(os.environ[k]) for k in ("COUNT", "SIZE", "ROUNDS", "SCRAPE_S"))
work = tempfile.mkdtemp(dir=os.environ.get("BENCH_DIR") or None)
procs = []
pids = {}
TICK = os.sysconf("SC_CLK_TCK")

def cpu_s(pid):
    """The broker's user + system CPU seconds so far (/proc/<pid>/stat fields 14 and 15)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK

def start(name, extra):
    port = free_port()
    args = [os.environ["STRATA_BIN"], "serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={work}/{name}"]
    for k, v in extra.items():
        args += ["--override", f"{k}={v}"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(f"{work}/{name}.err", "w"))
    procs.append(p)
    pids[f"127.0.0.1:{port}"] = p.pid
    deadline = time.time() + 30
    while not port_accepts(port):
        if time.time() > deadline or p.poll() is not None:
            sys.exit(f"broker {name} did not start: {open(f'{work}/{name}.err').read()[-2000:]}")
        time.sleep(0.1)
    return f"127.0.0.1:{port}"

http = free_port()
on = start("on", {"strata.metrics.listener": f"127.0.0.1:{http}"})
off = start("off", {})
stop = threading.Event()
scrapes = []

def scraper():
    while not stop.wait(SCRAPE_S):
        t = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=10) as r:
            r.read()
        scrapes.append(time.perf_counter() - t)
threading.Thread(target=scraper, daemon=True).start()

payload = os.urandom(SIZE)

def run(bootstrap):
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 262144,
                  "queue.buffering.max.messages": 1000000})
    pid = pids[bootstrap]
    cpu0 = cpu_s(pid)
    t = time.perf_counter()
    for i in range(COUNT):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    produce_s = time.perf_counter() - t
    cpu1 = cpu_s(pid)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 52428800, "enable.auto.commit": False})
    c.subscribe([topic])
    got, t = 0, time.perf_counter()
    while got < COUNT:
        for m in c.consume(num_messages=10000, timeout=1):
            if m.error() is None:
                got += 1
    consume_s = time.perf_counter() - t
    cpu2 = cpu_s(pid)
    c.close()
    mb = COUNT * SIZE / 1e6
    # Broker CPU seconds per GB: the cost metrics add, far less noisy than wall-clock MB/s.
    return mb / produce_s, mb / consume_s, (cpu1 - cpu0) * 1000 / mb, (cpu2 - cpu1) * 1000 / mb

results = {"on": [], "off": []}
try:
    run(on); run(off)  # warm-up, unreported
    for r in range(ROUNDS):
        order = [("on", on), ("off", off)] if r % 2 == 0 else [("off", off), ("on", on)]
        for side, bootstrap in order:
            prod, cons, pcpu, ccpu = run(bootstrap)
            results[side].append((prod, cons, pcpu, ccpu))
            print(f"round {r + 1} metrics-{side:3}: produce {prod:7.1f} MB/s  consume {cons:7.1f} MB/s  "
                  f"broker CPU {pcpu:6.2f} / {ccpu:6.2f} s per GB", flush=True)
finally:
    stop.set()
    for p in procs:
        p.terminate(); p.wait(30)
    shutil.rmtree(work, ignore_errors=True)
med = {s: [statistics.median(x[i] for x in v) for i in range(4)] for s, v in results.items()}
for s in ("on", "off"):
    print(f"median metrics-{s:3}: produce {med[s][0]:7.1f} MB/s  consume {med[s][1]:7.1f} MB/s  "
          f"broker CPU {med[s][2]:6.2f} / {med[s][3]:6.2f} s per GB")
print(f"ratio on/off: produce {med['on'][0] / med['off'][0]:.3f}  consume {med['on'][1] / med['off'][1]:.3f}")
print(f"broker CPU per GB on/off: produce {med['on'][2] / med['off'][2]:.3f}  consume {med['on'][3] / med['off'][3]:.3f}")
if scrapes:
    print(f"scrapes: {len(scrapes)}, median {statistics.median(scrapes) * 1000:.1f} ms")
PYEOF
