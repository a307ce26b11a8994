"""One consumer-group member in its own process, for the group tests (test_groups*.py).

Run as `python group_member.py CLIENT BOOTSTRAP TOPIC GROUP [INSTANCE_ID|-] [SESSION_MS] [OPTIONS]` with
CLIENT `confluent` (librdkafka) or `kafka-python`. GroupMember.java is the Java twin and speaks the same
protocol, so the tests drive all three clients alike. Options (librdkafka only; the Java twin takes
the same):
  --protocol classic|consumer   `group.protocol` (default classic). With `consumer` (KIP-848) the
                                member sets none of session.timeout.ms, heartbeat.interval.ms and
                                partition.assignment.strategy (the broker owns them; librdkafka
                                rejects them) and SESSION_MS is ignored.
  --regex REGEX                 subscribe to REGEX (librdkafka: a `^` pattern, sent to the broker
                                as SubscribedTopicRegex with the consumer protocol) instead of TOPIC.
  --remote-assignor NAME        `group.remote.assignor` (consumer protocol only): uniform or range.

Output: one JSON object per line on stdout, flushed at once (a SIGKILL loses nothing written):
  {"event": "started"}                                                 (subscribed, before the first poll)
  {"event": "assigned", "partitions": [...], "generation": g or null, "topics": [[t, p], ...], "held": [[t, p], ...]}
  {"event": "revoked" | "lost", "partitions": [...], "topics": [...], "held": [...]}
  {"event": "record", "partition": p, "offset": o, "value": "...", "topic": t}  (a record was processed)
  {"event": "committed", "offsets": {"p": next_offset, ...}, "topic_offsets": [[t, p, next_offset], ...]}
                                                                       (a sync commit succeeded)
  {"event": "commit_failed", "error": "..."}
  {"event": "client_error", "error": "...", "fatal": bool}          (librdkafka's error_cb: a
                                                                       diagnosis, not a failure)
  {"event": "closed"}
`partitions` and `offsets` list only TOPIC's partitions (what the single-topic tests read);
`topics` is the callback's partitions of every topic. The eager classic protocol passes the whole
assignment to each callback, the consumer protocol only what changed (incremental); `held` is
what the member holds after the callback either way.
Input: a line `close` on stdin (or EOF) closes the consumer cleanly: a dynamic member sends
LeaveGroup, a static member does not (KIP-345).

Processing is at-least-once made exactly-once across rebalances: the records of each poll are
"processed" (printed), then their offsets are committed synchronously before the next poll, and
the revoke callback commits anything still pending, so a partition changes hands only at a
committed position. Only a crash between print and commit can re-deliver a record.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

HEARTBEAT_MS = 500
MAX_POLL_INTERVAL_MS = 30_000
REGEX_METADATA_REFRESH_MS = 1000


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def emit_change(kind: str, topic: str, tps: list[tuple[str, int]], held: set[tuple[str, int]], **extra) -> None:
    """An assigned/revoked/lost event: TOPIC's partitions, every topic's, and what is held after."""
    emit(event=kind, partitions=sorted(p for t, p in tps if t == topic), **extra,
         topics=sorted([t, p] for t, p in tps), held=sorted([t, p] for t, p in held))


def emit_committed(topic: str, offsets: dict[tuple[str, int], int]) -> None:
    emit(event="committed", offsets={str(p): o for (t, p), o in sorted(offsets.items()) if t == topic},
         topic_offsets=[[t, p, o] for (t, p), o in sorted(offsets.items())])


def watch_stdin(stop: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "close":
            break
    stop.set()


def run_confluent(bootstrap: str, topic: str, group: str, instance: str | None, session_ms: int,
                  stop: threading.Event, opts: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    conf = {
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
        "enable.partition.eof": False,
        # Unsupported group protocols and the like show up only here, not as poll errors.
        "error_cb": lambda err: emit(event="client_error", error=str(err), fatal=err.fatal()),
    }
    if opts.protocol == "consumer":
        conf["group.protocol"] = "consumer"
        if opts.remote_assignor:
            conf["group.remote.assignor"] = opts.remote_assignor
    else:
        conf.update({"session.timeout.ms": session_ms, "heartbeat.interval.ms": HEARTBEAT_MS,
                     "partition.assignment.strategy": "range"})
    if opts.regex:
        # A topic created later is seen at the next metadata refresh (default 5 min).
        conf["topic.metadata.refresh.interval.ms"] = REGEX_METADATA_REFRESH_MS
    if instance:
        conf["group.instance.id"] = instance
    consumer = Consumer(conf)
    pending: dict[tuple[str, int], int] = {}
    held: set[tuple[str, int]] = set()

    def commit_pending() -> None:
        if not pending:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(pending.items())]
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
            emit_committed(topic, pending)
        pending.clear()

    def on_assign(_consumer, partitions):
        tps = [(tp.topic, tp.partition) for tp in partitions]
        held.update(tps)
        emit_change("assigned", topic, tps, held, generation=None)

    def on_revoke(_consumer, partitions):
        commit_pending()
        tps = [(tp.topic, tp.partition) for tp in partitions]
        held.difference_update(tps)
        emit_change("revoked", topic, tps, held)

    def on_lost(_consumer, partitions):
        pending.clear()
        tps = [(tp.topic, tp.partition) for tp in partitions]
        held.difference_update(tps)
        emit_change("lost", topic, tps, held)

    consumer.subscribe([opts.regex or topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit(event="started")
    while not stop.is_set():
        for msg in consumer.consume(num_messages=500, timeout=0.1):
            if msg.error():
                raise KafkaException(msg.error())
            emit(event="record", partition=msg.partition(), offset=msg.offset(), value=msg.value().decode(),
                 topic=msg.topic())
            pending[(msg.topic(), msg.partition())] = msg.offset() + 1
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
                     stop: threading.Event, opts: argparse.Namespace) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError

    if opts.protocol != "classic" or opts.regex or opts.remote_assignor:
        raise SystemExit("kafka-python supports only --protocol classic without --regex/--remote-assignor")
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance, enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=session_ms, heartbeat_interval_ms=HEARTBEAT_MS,
        max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
    )
    pending: dict[int, int] = {}
    held: set[tuple[str, int]] = set()

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
            emit_committed(topic, {(topic, p): o for p, o in pending.items()})
        pending.clear()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            commit_pending()
            tps = [(tp.topic, tp.partition) for tp in revoked]
            held.difference_update(tps)
            emit_change("revoked", topic, tps, held)

        def on_partitions_assigned(self, assigned):
            tps = [(tp.topic, tp.partition) for tp in assigned]
            held.update(tps)
            emit_change("assigned", topic, tps, held, generation=generation())

        def on_partitions_lost(self, lost):
            pending.clear()
            tps = [(tp.topic, tp.partition) for tp in lost]
            held.difference_update(tps)
            emit_change("lost", topic, tps, held)

    consumer.subscribe([topic], listener=Listener())
    wait_for_topic_metadata(consumer, topic)
    emit(event="started")
    while not stop.is_set():
        batches = consumer.poll(timeout_ms=100, max_records=500)
        for tp, records in sorted(batches.items(), key=lambda item: item[0].partition):
            for r in records:
                emit(event="record", partition=tp.partition, offset=r.offset, value=r.value.decode(),
                     topic=tp.topic)
                pending[tp.partition] = r.offset + 1
        commit_pending()
    consumer.close()
    emit(event="closed")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client", choices=["confluent", "kafka-python"])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("instance", nargs="?", default="-", help="group.instance.id, or - for a dynamic member")
    parser.add_argument("session_ms", nargs="?", type=int, default=6000, help="classic protocol only")
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    parser.add_argument("--regex")
    parser.add_argument("--remote-assignor")
    opts = parser.parse_args(argv)
    if opts.remote_assignor and opts.protocol != "consumer":
        parser.error("--remote-assignor needs --protocol consumer")
    return opts


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    instance = None if opts.instance == "-" else opts.instance
    stop = threading.Event()
    threading.Thread(target=watch_stdin, args=(stop,), daemon=True).start()
    runners = {"confluent": run_confluent, "kafka-python": run_kafka_python}
    runners[opts.client](opts.bootstrap, opts.topic, opts.group, instance, opts.session_ms, stop, opts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
