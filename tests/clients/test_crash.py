"""Durability seen by a client: acknowledged records survive SIGKILL (durable mode) and SIGTERM.

Guards the promise of `strata.durable.append=true` (an acks=all answer means fsynced) and of a
clean shutdown with the default page-cache mode, and that `strata log verify` accepts the log
directory afterwards.
"""

from __future__ import annotations

import subprocess
import time

from confluent_kafka import Producer

from records import Record, assert_records, consume_confluent, create_topic, make_records

TOPIC = "crash"


def verify_log_dirs(strata_bin, log_dir) -> None:
    proc = subprocess.run([str(strata_bin), "log", "verify", str(log_dir)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"strata log verify failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"


def test_acknowledged_records_survive_sigkill(broker_factory, strata_bin):
    b = broker_factory({"strata.durable.append": "true"}).start()
    create_topic(b.bootstrap, TOPIC)

    records = make_records("crash", 200_000)
    acked: dict[int, Record] = {}
    failed = 0

    def report(record):
        def on_delivery(err, msg):
            nonlocal failed
            if err is None:
                acked[msg.offset()] = record
            else:
                failed += 1
        return on_delivery

    producer = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": 5000, "retries": 0})
    kill_after = 5_000
    sent = 0
    deadline = time.monotonic() + 120

    def send(n: int) -> None:
        nonlocal sent
        for r in records[sent:sent + n]:
            producer.produce(TOPIC, value=r.value, key=r.key, headers=r.headers, timestamp=r.timestamp,
                             partition=0, on_delivery=report(r))
        sent += n

    while time.monotonic() < deadline and sent < len(records) - 2_000:
        if len(acked) >= kill_after:
            # Hand the client one more chunk (linger.ms keeps it from the wire for a few ms) and crash
            # the broker at once, so the kill lands with records in flight.
            send(1_000)
            producer.poll(0)
            b.kill()
            break
        if sent - len(acked) - failed < 20_000:  # bound the client's queue
            send(200)
        producer.poll(0.01)
    assert not b.running(), f"only {len(acked)} records acknowledged in 120 s"
    producer.flush(30)
    assert sent > len(acked), "the kill should land while records are in flight"

    b.start()  # same log dir, recovery after an unclean shutdown
    # Acknowledged offsets are a prefix 0..n-1 (one partition, in order); everything there must be back.
    n = len(acked)
    assert sorted(acked) == list(range(n))
    got = consume_confluent(b.bootstrap, TOPIC, n)
    assert_records(got, [acked[i] for i in range(n)])
    assert b.stop() == 0
    verify_log_dirs(strata_bin, b.log_dir)


def test_clean_shutdown_keeps_every_record(broker_factory, strata_bin):
    b = broker_factory().start()
    create_topic(b.bootstrap, TOPIC)
    records = make_records("clean", 20_000)
    producer = Producer({"bootstrap.servers": b.bootstrap, "acks": 1, "linger.ms": 20})
    for r in records:
        producer.produce(TOPIC, value=r.value, key=r.key, headers=r.headers, timestamp=r.timestamp, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0

    assert b.stop() == 0, "SIGTERM is a clean shutdown and exits 0"
    b.start()
    assert_records(consume_confluent(b.bootstrap, TOPIC, len(records)), records)
    assert b.stop() == 0
    verify_log_dirs(strata_bin, b.log_dir)
