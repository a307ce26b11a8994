"""Transactions seen by real clients (issue 16): the Java client, librdkafka and kafka-python.

A transactional producer's records become visible to `read_committed` consumers only once its
transaction commits; aborted ones never do, while `read_uncommitted` consumers see everything.
Every test waits until the last stable offset (ListOffsets read_committed) reaches the high
watermark, which fails if a transaction is left open, then reads each partition to its end and
checks every record, offset and order. The producers here write nothing else, so each
transaction takes its records' offsets plus one offset per partition for its commit or abort
marker, and the tests check those offsets exactly.

Record i of a batch named PREFIX has key PREFIX-key-i and value PREFIX-value-i and goes to
partition i % partitions (TxnProducer.java builds the same records).
"""

from __future__ import annotations

import json
import queue
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from records import create_topic, list_end_offsets, wait_stable

# Single-node settings for the transaction state topic, and a short abort check for the timeout test.
TXN_BROKER = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}
CONSUME_TIMEOUT_S = 60.0

# {partition: [(offset, key, value)]}
Log = dict[int, list[tuple[int, str, str]]]


def batch(prefix: str, count: int, partitions: int, partition: int) -> list[tuple[str, str]]:
    """The (key, value) pairs of batch PREFIX that land on `partition`, in send order."""
    return [(f"{prefix}-key-{i}", f"{prefix}-value-{i}") for i in range(partition, count, partitions)]


def expected_log(steps: list[tuple[str, str]], count: int, partitions: int, read_committed: bool) -> Log:
    """What each partition holds after `steps` [(commit|abort, prefix)] of `count` records each,
    written by one producer: each step's records at consecutive offsets, then its marker."""
    out: Log = {}
    for p in range(partitions):
        offset, records = 0, []
        for action, prefix in steps:
            for key, value in batch(prefix, count, partitions, p):
                if action == "commit" or not read_committed:
                    records.append((offset, key, value))
                offset += 1
            offset += 1  # the COMMIT or ABORT marker
        out[p] = records
    return out


def assert_log(got: Log, expected: Log, what: str) -> None:
    for p in expected:
        g, e = got.get(p, []), expected[p]
        assert len(g) == len(e), f"{what}, partition {p}: {len(g)} records, expected {len(e)}\ngot {g}\nexpected {e}"
        for (go, gk, gv), (eo, ek, ev) in zip(g, e):
            assert (go, gk, gv) == (eo, ek, ev), f"{what}, partition {p}: got {(go, gk, gv)}, expected {(eo, ek, ev)}"
    assert set(got) <= set(expected), f"{what}: records on unexpected partitions {sorted(set(got) - set(expected))}"


def java_read(java, bootstrap: str, topic: str, isolation: str, ends: dict[int, int]) -> Log:
    """Reads the topic with TxnConsume; checks it reached the end offsets `ends`."""
    out = java.run("TxnConsume", bootstrap, topic, isolation)
    got: Log = {}
    for o in out:
        if o["event"] == "record":
            got.setdefault(o["partition"], []).append((o["offset"], o["key"], o["value"]))
    done = {o["partition"]: (o["end"], o["position"]) for o in out if o["event"] == "done"}
    assert done == {p: (end, end) for p, end in ends.items()}, f"{isolation} (end, position) per partition: {done}"
    return got


def confluent_read(bootstrap: str, topic: str, partitions: int, isolation: str) -> Log:
    """Reads every partition from offset 0 until librdkafka reports its end (for read_committed
    the last stable offset)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"txn-read-{topic}", "enable.auto.commit": False,
        "enable.partition.eof": True, "isolation.level": isolation,
    })
    got: Log = {}
    at_end: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{isolation}: only partitions {at_end} reached their end"
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.partition())
                        continue
                    raise KafkaException(msg.error())
                at_end.discard(msg.partition())
                got.setdefault(msg.partition(), []).append((msg.offset(), msg.key().decode(), msg.value().decode()))
    finally:
        consumer.close()
    return got


def kafka_python_read(bootstrap: str, topic: str, partitions: int, isolation: str, ends: dict[int, int]) -> Log:
    """Reads every partition from the beginning with kafka-python until its position reaches the
    end offset kafka-python itself finds for that isolation level (checked against `ends`)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             group_id=None, consumer_timeout_ms=500)
    got: Log = {}
    try:
        tps = [KpTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}
        assert end == ends, f"kafka-python {isolation} end offsets {end}, expected {ends}"
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while any(consumer.position(tp) < end[tp.partition] for tp in tps):
            assert time.monotonic() < deadline, f"kafka-python {isolation}: positions " \
                f"{ {tp.partition: consumer.position(tp) for tp in tps} } never reached {end}"
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                for m in msgs:
                    got.setdefault(tp.partition, []).append((m.offset, m.key.decode(), m.value.decode()))
    finally:
        consumer.close()
    return got


def assert_java_txn_offsets(txns: list[dict], count: int, partitions: int) -> None:
    """Each TxnProducer step's records sit at consecutive offsets on each partition, one marker
    offset after the previous step's."""
    per = count // partitions
    for k, t in enumerate(txns):
        for p in range(partitions):
            first = k * (per + 1)
            assert t["offsets"][str(p)] == [first, first + per - 1], f"step {k} ({t['prefix']}): {t['offsets']}"


def rdkafka_transactions(bootstrap: str, transactional_id: str, topic: str, partitions: int,
                         steps: list[tuple[str, str]], count: int) -> None:
    """Runs `steps` [(commit|abort, prefix)] with a librdkafka transactional producer; every
    record is delivered (in the log) before its transaction ends."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60000, "linger.ms": 5})
    producer.init_transactions(30)
    for action, prefix in steps:
        producer.begin_transaction()
        errors, delivered = [], []

        def on_delivery(err, msg):
            (errors if err else delivered).append(err or msg.offset())

        for i in range(count):
            producer.produce(topic, key=f"{prefix}-key-{i}", value=f"{prefix}-value-{i}", partition=i % partitions,
                             on_delivery=on_delivery)
        assert producer.flush(30) == 0, f"{prefix}: records still queued after 30 s"
        assert not errors and len(delivered) == count, f"{prefix}: delivery errors {errors[:3]}"
        if action == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


STEPS = [("commit", "c1"), ("abort", "a1"), ("commit", "c2")]


def test_java_commit_abort_commit(broker_factory, java):
    """Commit, abort, commit over three partitions: read_committed sees both committed
    transactions in order and nothing of the aborted one; read_uncommitted sees all three."""
    b = broker_factory(TXN_BROKER).start()
    topic, partitions, count = "txn-java", 3, 30
    create_topic(b.bootstrap, topic, partitions)

    out = java.run("TxnProducer", b.bootstrap, "txn-java-1", topic, partitions, 60000,
                   *(f"{action}:{prefix}:{count}" for action, prefix in STEPS))
    txns = [o for o in out if o["event"] == "txn"]
    assert [(t["result"], t["prefix"]) for t in txns] == STEPS
    assert_java_txn_offsets(txns, count, partitions)

    ends = wait_stable(b.bootstrap, topic, partitions)
    assert ends == {p: 3 * (count // partitions + 1) for p in range(partitions)}, ends
    assert_log(java_read(java, b.bootstrap, topic, "read_committed", ends),
               expected_log(STEPS, count, partitions, read_committed=True), "java read_committed")
    assert_log(java_read(java, b.bootstrap, topic, "read_uncommitted", ends),
               expected_log(STEPS, count, partitions, read_committed=False), "java read_uncommitted")

    # Kafka's own reader (FileRecords, ensureValid on every batch) parses the segments with
    # their transactional batches and markers: one record per offset, markers included.
    dirs = [b.log_dir / f"{topic}-{p}" for p in range(partitions)]
    lines = java.run("ReadSegments", *(a for p, d in enumerate(dirs) for a in (str(d), str(ends[p]))))
    assert [(line["records"], line["next_offset"]) for line in lines] == \
        [(ends[p], ends[p]) for p in range(partitions)], lines
    # One aborted transaction per partition: one 34-byte .txnindex entry (Kafka's layout).
    for d in dirs:
        index = b"".join(f.read_bytes() for f in sorted(d.glob("*.txnindex")))
        assert len(index) == 34, (d, index.hex())
        assert index[:2] == b"\x00\x00", "AbortedTxn version 0"


def test_java_zombie_producer_is_fenced(broker_factory, java):
    """A second producer with the same transactional.id fences the first: the first one's open
    transaction is aborted, its later send/commit fail with ProducerFencedException or
    InvalidProducerEpochException, and only the second one's records are committed."""
    b = broker_factory(TXN_BROKER).start()
    topic, partitions, count = "txn-zombie", 3, 6
    create_topic(b.bootstrap, topic, partitions)

    out = java.run("TxnFencing", b.bootstrap, "txn-zombie-id", topic, partitions, count)
    events = {o["event"]: o for o in out}
    assert "a_sent" in events and "b_committed" in events, out
    outcome = events["a_outcome"]
    assert outcome["fenced"], f"the zombie was not fenced: {outcome['exceptions']}"
    assert not outcome["committed"], f"the zombie's commit succeeded: {outcome['exceptions']}"
    print(f"zombie saw: {outcome['exceptions']}")

    # Per partition: the zombie's records, the ABORT marker of the fence, B's records, B's COMMIT
    # marker. The zombie's late send (after the fence) must not be in the log.
    steps = [("abort", "zombie"), ("commit", "fenced-in")]
    ends = wait_stable(b.bootstrap, topic, partitions)
    assert ends == {p: 2 * (count // partitions + 1) for p in range(partitions)}, ends
    assert_log(java_read(java, b.bootstrap, topic, "read_committed", ends),
               expected_log(steps, count, partitions, read_committed=True), "java read_committed")
    assert_log(java_read(java, b.bootstrap, topic, "read_uncommitted", ends),
               expected_log(steps, count, partitions, read_committed=False), "java read_uncommitted")


class LineReader:
    """Reads a spawned program's JSON lines on a thread, so the test can wait with a deadline."""

    def __init__(self, proc):
        self.proc = proc
        self.lines: queue.Queue = queue.Queue()
        self.text: list[str] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        for line in self.proc.stdout:
            self.text.append(line)
            if line.startswith("{"):
                self.lines.put(json.loads(line))
        self.lines.put(None)  # end of output

    def next(self, deadline: float) -> dict | None:
        """The next JSON line, or None once the program's output ended."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise AssertionError("TxnTransform did not finish in time; its output:\n" + "".join(self.text[-50:]))
            try:
                return self.lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue


def test_java_consume_transform_produce_survives_broker_kill(broker_factory, java):
    """Consume-transform-produce with sendOffsetsToTransaction; the broker is SIGKILLed and
    restarted mid-run, later the loop itself is SIGKILLed inside a transaction (its records and
    offsets sent, not committed); the loop is restarted whenever it dies and resumes from the
    committed offsets. At the end the output read read_committed holds every input record exactly
    once, in order, although the log also holds the dead loop's aborted records."""
    b = broker_factory(TXN_BROKER, keep_port=True).start()
    src, dst, partitions, count = "ctp-in", "ctp-out", 3, 900
    create_topic(b.bootstrap, src, partitions)
    create_topic(b.bootstrap, dst, partitions)
    producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(src, key=f"in-key-{i}", value=f"in-value-{i}", partition=i % partitions)
    assert producer.flush(30) == 0

    deadline = time.monotonic() + 150
    commits_before_kill = 0
    commits = 0
    runs: list[str] = []
    killed = java_killed = done = False
    while not done:
        assert len(runs) < 6, f"TxnTransform did not finish in 6 runs: {runs}"
        last_error = None
        proc = java.spawn("TxnTransform", b.bootstrap, src, dst, "ctp-group", "ctp-txn", 50, 100)
        reader = LineReader(proc)
        try:
            while (event := reader.next(deadline)) is not None:
                if event["event"] == "sent" and killed and not java_killed and commits >= commits_before_kill + 4:
                    # Inside a transaction (100 ms before its commit): its records are in the log.
                    proc.kill()
                    java_killed = True
                elif event["event"] == "committed":
                    commits += 1
                    if not killed and commits >= 4:
                        # Mid-run: the loop is inside its next transaction (or about to begin it).
                        b.kill()
                        time.sleep(0.5)
                        b.start()
                        killed, commits_before_kill = True, commits
                elif event["event"] == "done":
                    done = True
                elif event["event"] == "error":
                    last_error = event["error"]
        finally:
            if proc.poll() is None and not done:
                proc.kill()
            code = proc.wait(timeout=30)
        assert done or code != 0, f"TxnTransform exited {code} without finishing:\n{''.join(reader.text[-50:])}"
        if not done:
            runs.append(f"exit {code}: {last_error}")
    print(f"commits: {commits} ({commits_before_kill} before the kill); failed runs: {runs}")
    assert killed and commits > commits_before_kill, "the broker kill did not land mid-run"
    assert java_killed, "the loop was never killed inside a transaction"

    ends = wait_stable(b.bootstrap, dst, partitions)
    got = java_read(java, b.bootstrap, dst, "read_committed", ends)
    for p in range(partitions):
        values = [v for _, _, v in got.get(p, [])]
        want = [f"T:in-value-{i}" for i in range(p, count, partitions)]
        dups = len(values) - len(set(values))
        missing = sorted(set(want) - set(values))[:5]
        assert dups == 0 and not missing, f"partition {p}: {dups} duplicates, missing {missing}"
        assert values == want, f"partition {p}: output out of order"
    # The killed loop's transaction was aborted: its records are in the log, read_uncommitted
    # returns them, read_committed above did not.
    everything = java_read(java, b.bootstrap, dst, "read_uncommitted", ends)
    aborted = sum(len(r) for r in everything.values()) - count
    assert aborted > 0, "no aborted records in the output: the kill did not land inside a transaction"
    print(f"aborted output records skipped by read_committed: {aborted}")

    def committed_offsets() -> dict[int, int]:
        consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ctp-group",
                             "isolation.level": "read_committed"})
        try:
            got = consumer.committed([TopicPartition(src, p) for p in range(partitions)], timeout=30)
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in got}

    assert committed_offsets() == {p: count // partitions for p in range(partitions)}
    # After another SIGKILL the group coordinator rebuilds them from __consumer_offsets: the
    # transactional offset batches count only where a COMMIT marker followed them.
    b.kill()
    b.start()
    assert committed_offsets() == {p: count // partitions for p in range(partitions)}


def test_confluent_kafka_commit_abort_commit(broker_factory):
    """librdkafka's transactional producer: commit, abort, commit; read back with librdkafka
    read_committed (only the committed records) and read_uncommitted (all of them)."""
    b = broker_factory(TXN_BROKER).start()
    topic, partitions, count = "txn-rdkafka", 3, 30
    create_topic(b.bootstrap, topic, partitions)
    rdkafka_transactions(b.bootstrap, "txn-rdkafka-1", topic, partitions, STEPS, count)

    ends = wait_stable(b.bootstrap, topic, partitions)
    assert ends == {p: 3 * (count // partitions + 1) for p in range(partitions)}, ends
    assert_log(confluent_read(b.bootstrap, topic, partitions, "read_committed"),
               expected_log(STEPS, count, partitions, read_committed=True), "librdkafka read_committed")
    assert_log(confluent_read(b.bootstrap, topic, partitions, "read_uncommitted"),
               expected_log(STEPS, count, partitions, read_committed=False), "librdkafka read_uncommitted")


def test_kafka_python_read_committed(broker_factory):
    """kafka-python's consumer with isolation_level='read_committed' skips aborted records
    (and read_uncommitted returns them); transactions written by librdkafka."""
    b = broker_factory(TXN_BROKER).start()
    topic, partitions, count = "txn-kp", 2, 20
    create_topic(b.bootstrap, topic, partitions)
    rdkafka_transactions(b.bootstrap, "txn-kp-1", topic, partitions, STEPS, count)

    ends = wait_stable(b.bootstrap, topic, partitions)
    assert_log(kafka_python_read(b.bootstrap, topic, partitions, "read_committed", ends),
               expected_log(STEPS, count, partitions, read_committed=True), "kafka-python read_committed")
    assert_log(kafka_python_read(b.bootstrap, topic, partitions, "read_uncommitted", ends),
               expected_log(STEPS, count, partitions, read_committed=False), "kafka-python read_uncommitted")


def test_kafka_python_transactional_producer(broker_factory):
    """kafka-python's own transactional producer (its own request versions): commit, abort,
    commit, read back with kafka-python read_committed and read_uncommitted."""
    b = broker_factory(TXN_BROKER).start()
    topic, partitions, count = "txn-kp-producer", 2, 20
    create_topic(b.bootstrap, topic, partitions)
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id="txn-kp-producer-1",
                             max_block_ms=30000)
    try:
        producer.init_transactions()
        for action, prefix in STEPS:
            producer.begin_transaction()
            futures = [producer.send(topic, key=f"{prefix}-key-{i}".encode(), value=f"{prefix}-value-{i}".encode(),
                                     partition=i % partitions) for i in range(count)]
            producer.flush(timeout=30)
            for f in futures:
                f.get(timeout=30)  # in the log before the transaction ends
            if action == "commit":
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=10)

    ends = wait_stable(b.bootstrap, topic, partitions)
    assert ends == {p: 3 * (count // partitions + 1) for p in range(partitions)}, ends
    assert_log(kafka_python_read(b.bootstrap, topic, partitions, "read_committed", ends),
               expected_log(STEPS, count, partitions, read_committed=True), "kafka-python read_committed")
    assert_log(kafka_python_read(b.bootstrap, topic, partitions, "read_uncommitted", ends),
               expected_log(STEPS, count, partitions, read_committed=False), "kafka-python read_uncommitted")


def test_timed_out_transaction_is_aborted(broker_factory, java):
    """A producer dies with its transaction open (transaction.timeout.ms=3000): the open
    transaction holds the last stable offset at its first record until the coordinator aborts it
    on timeout; then the LSO reaches the log end and another producer's committed records are
    visible to read_committed while the dead producer's never are."""
    b = broker_factory({**TXN_BROKER, "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}).start()
    topic, partitions, count = "txn-timeout", 2, 10
    create_topic(b.bootstrap, topic, partitions)

    out = java.run("TxnProducer", b.bootstrap, "txn-stalled", topic, partitions, 3000, f"halt:stalled:{count}")
    halted = time.monotonic()
    assert [o["result"] for o in out if o["event"] == "txn"] == ["open"], out
    per = count // partitions
    stable = list_end_offsets(b.bootstrap, topic, partitions, read_committed=True)
    high = list_end_offsets(b.bootstrap, topic, partitions, read_committed=False)
    assert high == {p: per for p in range(partitions)}, high
    assert stable == {p: 0 for p in range(partitions)}, f"LSO {stable} with a transaction open from offset 0"

    ends = wait_stable(b.bootstrap, topic, partitions, timeout_s=30)
    print(f"timed-out transaction aborted {time.monotonic() - halted:.1f}s after the producer died")
    assert ends == {p: per + 1 for p in range(partitions)}, f"{ends}: expected the records and one ABORT marker"

    out = java.run("TxnProducer", b.bootstrap, "txn-after", topic, partitions, 60000, f"commit:after:{count}")
    assert [o["result"] for o in out if o["event"] == "txn"] == ["commit"], out
    ends = wait_stable(b.bootstrap, topic, partitions)
    steps = [("abort", "stalled"), ("commit", "after")]
    assert_log(java_read(java, b.bootstrap, topic, "read_committed", ends),
               expected_log(steps, count, partitions, read_committed=True), "java read_committed")
    assert_log(java_read(java, b.bootstrap, topic, "read_uncommitted", ends),
               expected_log(steps, count, partitions, read_committed=False), "java read_uncommitted")
