"""Committed offsets survive a broker restart and a broker SIGKILL, for every client; a group
mixing the three clients splits the partitions once.

Guards against: commits acknowledged but not in `__consumer_offsets` (or only in memory), a
restart that does not load the group's offsets (the group would start over from `earliest` and
re-read everything), a group loaded with its dead members that never expires them, and protocol
details that only agree between members of the same client.
"""

from __future__ import annotations

import time

import pytest

from group_harness import (CLIENTS, MemberFactory, check_exactly_once, committed_offsets, produce_batch,
                           wait_consumed, wait_stable)
from records import create_topic

PARTITIONS = 6
TOPIC = "payments"
GROUP = "g-payments"
PER_PARTITION = 50
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(params=CLIENTS)
def members(request):
    kind = request.param
    classpath = request.getfixturevalue("java").classpath if kind == "java" else None
    factory = MemberFactory(kind, classpath)
    yield factory
    factory.cleanup()


def wait_committed(group, expected: dict[int, int], timeout: float = 30.0) -> None:
    """Waits until the members' acknowledged commits (whoever made them) reach `expected`."""
    deadline = time.monotonic() + timeout
    while True:
        got: dict[int, int] = {}
        for m in group:
            for p, o in m.committed().items():
                got[p] = max(got.get(p, 0), o)
        if got == expected:
            return
        assert time.monotonic() < deadline, f"commits {got}, expected {expected}"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["stop", "sigkill"])
def test_committed_offsets_survive_broker_restart(broker_factory, members, how):
    """A group reads and commits everything, the broker goes down (SIGTERM after the members left,
    or SIGKILL under live members), comes back on the same log dir, and a new generation of the
    group reads exactly the records produced since: none of the old ones again (auto.offset.reset
    is earliest, so lost commits would replay them), none missing.

    After the SIGKILL the group loads as Stable with three members that will never heartbeat; the
    new members are assigned once the broker has expired those sessions."""
    b = broker_factory(BROKER_OVERRIDES).start()
    create_topic(b.bootstrap, TOPIC, partitions=PARTITIONS)
    first = produce_batch(b.bootstrap, TOPIC, PARTITIONS, "before", PER_PARTITION)
    group = [members.start(n, b.bootstrap, TOPIC, GROUP) for n in ["a", "b", "c"]]
    wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
    wait_consumed(group, first)
    expected_commits = {p: PER_PARTITION for p in range(PARTITIONS)}
    wait_committed(group, expected_commits)
    check_exactly_once(group, first)
    assert committed_offsets(b.bootstrap, GROUP, TOPIC, PARTITIONS) == expected_commits

    if how == "stop":
        for m in group:
            m.close()
        assert b.stop() == 0
    else:
        b.kill()
        for m in group:
            m.kill()
    b.start()

    assert committed_offsets(b.bootstrap, GROUP, TOPIC, PARTITIONS) == expected_commits
    second = produce_batch(b.bootstrap, TOPIC, PARTITIONS, "after", PER_PARTITION)
    assert all(o >= PER_PARTITION for _, o in second)
    again = [members.start(n, b.bootstrap, TOPIC, GROUP) for n in ["d", "e", "f"]]
    wait_stable(again, PARTITIONS, sizes=[2, 2, 2])
    wait_consumed(again, second)
    for m in again:
        m.close()
    check_exactly_once(again, second)
    assert committed_offsets(b.bootstrap, GROUP, TOPIC, PARTITIONS) == {p: 2 * PER_PARTITION for p in range(PARTITIONS)}


def test_mixed_client_group_splits_partitions(broker_factory, java):
    """One member of each client in one group: they agree on the range protocol, hold two
    partitions each and read each record exactly once."""
    b = broker_factory(BROKER_OVERRIDES).start()
    create_topic(b.bootstrap, TOPIC, partitions=PARTITIONS)
    factory = MemberFactory("confluent", java.classpath)
    try:
        group = [factory.start(kind, b.bootstrap, TOPIC, GROUP, kind=kind) for kind in CLIENTS]
        held = wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
        expected = produce_batch(b.bootstrap, TOPIC, PARTITIONS, "mixed", 20)
        wait_consumed(group, expected)
        for m in group:
            assert {p for p, _, _ in m.records()} == held[m.name]
        for m in group:
            m.close()
        check_exactly_once(group, expected)
    finally:
        factory.cleanup()
