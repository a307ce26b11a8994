"""One consumer-group member in its own process, for the group tests (test_groups*.py).

Run as `python group_member.py CLIENT BOOTSTRAP TOPIC GROUP [INSTANCE_ID|-] [SESSION_MS]` with CLIENT
`confluent` (librdkafka) or `kafka-python`. GroupMember.java is the Java twin and speaks the same
protocol, so the tests drive all three clients alike.

Output: one JSON object per line on stdout, flushed at once (a SIGKILL loses nothing written):
  {"event": "started"}                                                 (subscribed, before the first poll)
  {"event": "assigned", "partitions": [...], "generation": g or null}
  {"event": "revoked" | "lost", "partitions": [...]}
  {"event": "record", "partition": p, "offset": o, "value": "..."}     (a record was processed)
  {"event": "committed", "offsets": {"p": next_offset, ...}}           (a sync commit succeeded)
  {"event": "commit_failed", "error": "..."}
  {"event": "closed"}
Input: a line `close` on stdin (or EOF) closes the consumer cleanly: a dynamic member sends
LeaveGroup, a static member does not (KIP-345).

Processing is at-least-once made exactly-once across rebalances: the records of each poll are
"processed" (printed), then their offsets are committed synchronously before the next poll, and
the revoke callback commits anything still pending, so a partition changes hands only at a
committed position. Only a crash between print and commit can re-deliver a record.
"""

from __future__ import annotations

import json
import sys
import threading
import time

HEARTBEAT_MS = 500
MAX_POLL_INTERVAL_MS = 30_000


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def watch_stdin(stop: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "close":
            break
    stop.set()


def run_confluent(bootstrap: str, topic: str, group: str, instance: str | None, session_ms: int,
                  stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    conf = {
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": HEARTBEAT_MS, "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
        "partition.assignment.strategy": "range", "enable.partition.eof": False,
    }
    if instance:
        conf["group.instance.id"] = instance
    consumer = Consumer(conf)
    pending: dict[int, int] = {}

    def commit_pending() -> None:
        if not pending:
            return
        offsets = [TopicPartition(topic, p, o) for p, o in sorted(pending.items())]
        try:
            result = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            emit(event="commit_failed", error=str(e))
            pending.clear()
            return
        errors = [str(tp.error) for tp in result if tp.error is not None]
        if errors:
            emit(event="commit_failed", error="; ".join(errors))
        else:
            emit(event="committed", offsets={str(p): o for p, o in sorted(pending.items())})
        pending.clear()

    def on_assign(_consumer, partitions):
        emit(event="assigned", partitions=sorted(tp.partition for tp in partitions), generation=None)

    def on_revoke(_consumer, partitions):
        commit_pending()
        emit(event="revoked", partitions=sorted(tp.partition for tp in partitions))

    def on_lost(_consumer, partitions):
        pending.clear()
        emit(event="lost", partitions=sorted(tp.partition for tp in partitions))

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit(event="started")
    while not stop.is_set():
        for msg in consumer.consume(num_messages=500, timeout=0.1):
            if msg.error():
                raise KafkaException(msg.error())
            emit(event="record", partition=msg.partition(), offset=msg.offset(), value=msg.value().decode())
            pending[msg.partition()] = msg.offset() + 1
        commit_pending()
    consumer.close()
    emit(event="closed")


def wait_for_topic_metadata(consumer, topic: str, timeout_s: float = 30.0) -> None:
    """Blocks until kafka-python's metadata holds the partitions of `topic`.

    Works around a kafka-python 3.0.12 client bug that otherwise strands a member now and then
    (seen as "one member joins but never gets its assignment; its session expires"):
    1. A member that joins before its first metadata answer for `topic` and is elected leader
       assigns nothing ("No partition metadata for topic"); with `group.initial.rebalance.delay.ms`
       at 0 a lone first member's join completes at once, often before that answer.
    2. When the metadata arrives the leader's assignment snapshot differs from the metadata
       snapshot, so `need_rejoin()` is true and it rejoins; the rejoin outlasts one
       `poll(timeout_ms=100)` because the other members learn of it only at their next heartbeat.
    3. As the leader the member computes the new assignment on its IO thread, which resets the
       assignment snapshot, so `need_rejoin()` turns false while its SyncGroup is still in flight.
       A poll in that window leaves `join_group_async` through `while self.need_rejoin()` without
       awaiting the pending join task (the Java client loops on `rejoinNeededOrPending()`), so
       the SyncGroup answer (sent by the broker, received by the client) is never applied: the
       member stays REBALANCING with heartbeats disabled and never consumes.
    Knowing the partitions before the first poll (so the first join) removes step 1; the metadata
    listener has then already recorded the snapshot the leader's assignment is compared against.
    """
    deadline = time.monotonic() + timeout_s
    while not consumer.partitions_for_topic(topic):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no metadata for topic {topic} within {timeout_s}s")
        time.sleep(0.05)


def run_kafka_python(bootstrap: str, topic: str, group: str, instance: str | None, session_ms: int,
                     stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance, enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=session_ms, heartbeat_interval_ms=HEARTBEAT_MS,
        max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
    )
    pending: dict[int, int] = {}

    def generation() -> int | None:
        gen = getattr(consumer._coordinator, "_generation", None)  # no public accessor in kafka-python
        return getattr(gen, "generation_id", None)

    def commit_pending() -> None:
        if not pending:
            return
        offsets = {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in pending.items()}
        try:
            consumer.commit(offsets)
        except KafkaError as e:
            emit(event="commit_failed", error=repr(e))
        else:
            emit(event="committed", offsets={str(p): o for p, o in sorted(pending.items())})
        pending.clear()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            commit_pending()
            emit(event="revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            emit(event="assigned", partitions=sorted(tp.partition for tp in assigned), generation=generation())

        def on_partitions_lost(self, lost):
            pending.clear()
            emit(event="lost", partitions=sorted(tp.partition for tp in lost))

    consumer.subscribe([topic], listener=Listener())
    wait_for_topic_metadata(consumer, topic)
    emit(event="started")
    while not stop.is_set():
        batches = consumer.poll(timeout_ms=100, max_records=500)
        for tp, records in sorted(batches.items(), key=lambda item: item[0].partition):
            for r in records:
                emit(event="record", partition=tp.partition, offset=r.offset, value=r.value.decode())
                pending[tp.partition] = r.offset + 1
        commit_pending()
    consumer.close()
    emit(event="closed")


def main(argv: list[str]) -> int:
    client, bootstrap, topic, group = argv[:4]
    instance = argv[4] if len(argv) > 4 and argv[4] != "-" else None
    session_ms = int(argv[5]) if len(argv) > 5 else 6000
    stop = threading.Event()
    threading.Thread(target=watch_stdin, args=(stop,), daemon=True).start()
    runners = {"confluent": run_confluent, "kafka-python": run_kafka_python}
    runners[client](bootstrap, topic, group, instance, session_ms, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
