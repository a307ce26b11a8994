"""The fault suite's checker catches what it claims to: lost, misplaced, duplicated and reordered
records, replicas whose batches differ or stop short of the high watermark, and a torn tail
that is not a difference. No broker: synthetic delivery reports and segment files.
"""

from __future__ import annotations

import struct
from pathlib import Path

from fault_checker import Report, analyze, batches_below, checkpointed_hw, compare_replicas
from faults import Ack, Workload, fetcher_node

TOPIC = "t"


def report() -> Report:
    return Report(seed=0, replication_factor=3, faults={}, skipped={}, unhealed=0, isr_full=True)


def batch(base: int, records: int, payload: bytes = b"x") -> bytes:
    """A batch header as the checker reads it (base offset, length, epoch, magic, crc, attributes,
    last offset delta) and a payload; the rest of a real batch does not matter to it."""
    body = struct.pack(">ibIhi", 0, 2, 0, 0, records - 1) + payload.ljust(40, b"\0")
    return struct.pack(">qi", base, len(body)) + body


def write_partition(log_dir: Path, partition: int, segments: dict[int, bytes]) -> None:
    d = log_dir / f"{TOPIC}-{partition}"
    d.mkdir(parents=True)
    for base, data in segments.items():
        (d / f"{base:020d}.log").write_bytes(data)


def workload_with(acked: dict[str, Ack]) -> Workload:
    w = Workload("unused:1", TOPIC, 2, producers=1)
    w.logs[0].acked.update(acked)
    return w


def test_clean_history_has_no_findings():
    got = {0: [(0, b"p0.1:0"), (1, b"p0.1:2")], 1: [(0, b"p0.1:1")]}
    r = report()
    analyze(r, workload_with({"p0.1:0": Ack(0, 0), "p0.1:1": Ack(1, 0), "p0.1:2": Ack(0, 1)}), got)
    assert (r.lost, r.misplaced, r.duplicates, r.order_violations, r.consumed, r.acknowledged) == (0, 0, 0, 0, 3, 3)


def test_lost_misplaced_duplicate_and_reordered_records_are_counted():
    got = {
        0: [(0, b"p0.1:0"), (1, b"p0.1:4"), (2, b"p0.1:2"), (3, b"p0.1:0")],  # 2 after 4; 0 twice
        1: [(0, b"p0.1:3"), (1, b"p0.2:0")],  # a second incarnation has its own sequence
    }
    acked = {"p0.1:0": Ack(0, 0), "p0.1:2": Ack(0, 2), "p0.1:4": Ack(0, 1),
             "p0.1:3": Ack(1, 5),   # found elsewhere: misplaced
             "p0.1:6": Ack(1, 2)}   # nowhere: lost
    r = report()
    analyze(r, workload_with(acked), got)
    assert r.lost == 1 and r.misplaced == 1
    assert r.duplicates == 1
    assert r.order_violations == 2, r.problems  # 2 after 4, and 0 after 4 again


def test_an_acknowledgement_without_offset_is_not_a_misplaced_record():
    got = {0: [(0, b"p0.1:0")], 1: [(0, b"p0.1:1")]}
    r = report()
    analyze(r, workload_with({"p0.1:0": Ack(0, None), "p0.1:1": Ack(0, None), "p0.1:2": Ack(1, None)}), got)
    assert (r.acked_without_offset, r.misplaced, r.lost) == (1, 1, 1), r.problems


def test_replicas_compared_across_segment_boundaries_up_to_the_high_watermark(tmp_path):
    a, b, c = batch(0, 3, b"a"), batch(3, 2, b"b"), batch(5, 4, b"c")
    leader, same, short, other = (tmp_path / n for n in ("1", "2", "3", "4"))
    write_partition(leader, 0, {0: a + b + c})
    write_partition(same, 0, {0: a, 3: b + c[:10]})  # rolled elsewhere, torn tail above the HW
    write_partition(short, 0, {0: a})
    write_partition(other, 0, {0: a + batch(3, 2, b"B") + c})
    dirs = {1: leader, 2: same, 3: short, 4: other}

    r = report()
    used = compare_replicas(r, dirs, TOPIC, {0: [1, 2]}, {0: 1}, {0: 5})
    assert used == {0: 5} and r.replicas_compared == 1 and r.replica_mismatches == 0, r.problems

    r = report()
    compare_replicas(r, dirs, TOPIC, {0: [1, 2, 3, 4]}, {0: 1}, {0: 5})
    assert r.replicas_compared == 3 and r.replica_mismatches == 2, r.problems

    r = report()  # the leader's own log ending below the HW it reports is a finding too
    compare_replicas(r, dirs, TOPIC, {0: [3]}, {0: 3}, {0: 5})
    assert r.replica_mismatches == 1, r.problems


def test_high_watermark_from_the_checkpoint_file(tmp_path):
    (tmp_path / "replication-offset-checkpoint").write_text("0\n2\nt 0 5\nt 1 7\n")
    assert checkpointed_hw(tmp_path, TOPIC, 1) == 7
    assert checkpointed_hw(tmp_path, TOPIC, 2) is None
    assert checkpointed_hw(tmp_path / "missing", TOPIC, 0) is None
    write_partition(tmp_path, 0, {0: batch(0, 3) + batch(3, 2) + batch(5, 1)})
    assert [(s, e) for s, e, _ in batches_below(tmp_path / f"{TOPIC}-0", 5)] == [(0, 2), (3, 4)]


def test_replica_fetchers_are_recognised_by_client_id():
    assert fetcher_node("strata-replica-fetcher-3") == 3
    assert fetcher_node("broker-2-fetcher-0") == 2
    assert fetcher_node("faults-p0") is None and fetcher_node("rdkafka") is None
