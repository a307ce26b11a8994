"""KIP-848 consumer groups (`group.protocol=consumer`) with the Java 3.9 client and librdkafka.

Each test runs once per client (the Java AsyncKafkaConsumer, librdkafka through confluent-kafka),
every member in its own process (group_member.py / GroupMember.java) so a crash is a real SIGKILL.
The broker assigns partitions (uniform unless a member asks for range) and members reconcile
incrementally: only partitions that move are revoked, and a partition is handed to its new owner
only after the old owner revoked it (after committing, in its revoke callback). So every record is
processed exactly once unless a member dies between processing and commit. ConsumerGroupDescribe
(consumer_group_describe.py) shows what the broker holds: state, epochs, assignor, each member's
subscription and assignment.

Guards against: a broker that assigns a partition twice or not at all, stops members that keep
their partitions during a rebalance (a classic-style "stop the world"), never expires a killed
member, loses commits or consumer-group state across a restart, ignores a regex subscription's
new topics, rebalances when a static member comes back, cannot take over a classic group
whose members upgrade one by one, or cannot hand the group back to its classic members when the
last consumer-protocol member leaves.
"""

from __future__ import annotations

import time

import pytest

from consumer_group_describe import DescribedGroup, describe
from group_harness import (BackgroundProducer, MemberFactory, check_exactly_once, committed_offsets, longest_gap,
                           produce_batch, wait_consumed, wait_stable)
from records import create_topic

PARTITIONS = 6
TOPIC = "events"
GROUP = "g-events"
SESSION_MS = 6000
SESSION_S = SESSION_MS / 1000
# Kafka's names; `classic` stays enabled for the migration test and for committed_offsets().
BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.migration.policy": "bidirectional",
}
CLIENTS = ["confluent", "java"]
# The longest a member that keeps its partitions may go without a record while the group
# rebalances around it: the background producer writes 50 records/s to every partition, so a
# member that keeps consuming sees a record every few tens of ms.
MAX_GAP_S = 1.0
# After a SIGKILL the broker notices at the session timeout; the survivors learn of the new
# assignment at their next heartbeat (500 ms) and take the free partitions at once.
CRASH_SLACK_S = 2.0


@pytest.fixture(params=CLIENTS)
def members(request):
    kind = request.param
    classpath = request.getfixturevalue("java").classpath if kind == "java" else None
    factory = MemberFactory(kind, classpath)
    yield factory
    factory.cleanup()


def start_broker(broker_factory, **extra: str):
    b = broker_factory({**BROKER_OVERRIDES, **extra}).start()
    create_topic(b.bootstrap, TOPIC, partitions=PARTITIONS)
    return b


def start_group(members, bootstrap, names, **kw):
    return [members.start(n, bootstrap, TOPIC, GROUP, protocol="consumer", **kw) for n in names]


def consumed_after(member, since: float) -> int:
    return len(member.record_times(since))


def wait_described(bootstrap: str, predicate, what: str, group: str = GROUP, timeout: float = 15.0) -> DescribedGroup:
    """Polls ConsumerGroupDescribe until `predicate(group)` holds (the broker marks a member
    reconciled at its next heartbeat, which may follow the client's callback)."""
    deadline = time.monotonic() + timeout
    while True:
        d = describe(bootstrap, group)
        if d.error_code == 0 and predicate(d):
            return d
        if time.monotonic() > deadline:
            raise AssertionError(f"ConsumerGroupDescribe never showed {what}: {d}")
        time.sleep(0.2)


def assignments(d: DescribedGroup, topic: str = TOPIC) -> list[tuple[int, ...]]:
    return sorted(tuple(m.assignment.get(topic, [])) for m in d.members)


def exactly_once_by_topic(group, expected: dict[tuple[str, int, int], str]) -> None:
    """check_exactly_once across topics: every expected (topic, partition, offset) processed once
    with its value, nothing else processed."""
    seen: dict[tuple[str, int, int], str] = {}
    for m in group:
        for t, p, o, value in m.topic_records():
            key = (t, p, o)
            assert key in expected, f"{m.name} processed {key} = {value!r}, which was never produced here"
            assert key not in seen, f"{key} processed twice"
            assert value == expected[key], f"{m.name}: {key} is {value!r}, produced {expected[key]!r}"
            seen[key] = value
    missing = set(expected) - set(seen)
    assert not missing, f"{len(missing)} records never consumed, e.g. {sorted(missing)[:10]}"
    failures = [(m.name, e.fields) for m in group for e in m.snapshot() if e.kind == "commit_failed"]
    assert not failures, f"commits failed: {failures[:5]}"


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_three_members_share_partitions(broker_factory, members, assignor):
    """Three consumer-protocol members split six partitions two each with the server assignor
    they name (`group.remote.assignor`), read exactly their own, and ConsumerGroupDescribe agrees:
    Stable, the named assignor, every member at the assignment epoch holding its target; with
    range, the members sorted by member id hold 0-1, 2-3 and 4-5."""
    b = start_broker(broker_factory)
    group = start_group(members, b.bootstrap, ["a", "b", "c"], remote_assignor=assignor)
    held = wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
    d = wait_described(b.bootstrap, lambda d: d.state == "Stable" and len(d.members) == 3, "a Stable group of 3")
    assert d.assignor == assignor
    assert d.group_epoch == d.assignment_epoch, d
    for m in d.members:
        assert m.member_epoch == d.assignment_epoch, d
        assert m.assignment == m.target_assignment, d
        assert m.subscribed_topic_names == [TOPIC], d
        assert m.client_host == "/127.0.0.1", d
    assert assignments(d) == sorted(tuple(sorted(h)) for h in held.values()), (d, held)
    if assignor == "range":
        by_id = [tuple(m.assignment[TOPIC]) for m in sorted(d.members, key=lambda m: m.member_id)]
        assert by_id == [(0, 1), (2, 3), (4, 5)], d
    expected = produce_batch(b.bootstrap, TOPIC, PARTITIONS, "share", per_partition=20)
    wait_consumed(group, expected)
    for m in group:
        partitions = {p for p, _, _ in m.records()}
        assert partitions == held[m.name], f"{m.name} read partitions {partitions}, holds {held[m.name]}"
    for m in group:
        m.close()
    check_exactly_once(group, expected)
    for m in group:
        for p in held[m.name]:
            assert m.committed().get(p) == 20, f"{m.name} committed {m.committed()} for {held[m.name]}"


def test_killed_member_partitions_move_within_session_timeout(broker_factory, members):
    """A member killed with SIGKILL (no leave heartbeat, no last commit): the broker expires it at
    the session timeout and the two others take its partitions within one heartbeat after,
    without losing or giving back any of their own. Records the dead member processed but had
    not committed are the only ones allowed twice."""
    b = start_broker(broker_factory)
    producer = BackgroundProducer(b.bootstrap, TOPIC, PARTITIONS, "crash")
    try:
        group = start_group(members, b.bootstrap, ["a", "b", "c"])
        held = wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
        victim, stay = group[2], group[:2]
        victim.wait_for(lambda m: len(m.records()) >= 20 and m.count("committed") >= 2, "records and commits")
        killed_at = victim.kill()
        after = wait_stable(stay, PARTITIONS, sizes=[3, 3], timeout=SESSION_S + 30)
        took = time.monotonic() - killed_at
        assert took < SESSION_S + CRASH_SLACK_S, f"the dead member's partitions moved after {took:.1f}s"
        for m in stay:
            assert held[m.name] <= after[m.name], f"{m.name} held {held[m.name]}, now {after[m.name]}"
            taken = [e.fields for e in m.changes(killed_at) if e.kind != "assigned"]
            assert not taken, f"{m.name} lost partitions to a rebalance it had no part in: {taken}"
        since = time.monotonic()
        for m in stay:
            m.wait_for(lambda m: consumed_after(m, since) >= 5, "records after the crash")
    finally:
        expected = producer.stop()
    wait_consumed(group, expected)
    for m in stay:
        m.close()
    committed = victim.committed()
    allowed = {(p, o) for p, o, _ in victim.records() if o >= committed.get(p, 0)}
    check_exactly_once(group, expected, allowed_duplicates=allowed)


def test_joining_member_does_not_stop_the_others(broker_factory, members):
    """A fourth member joins while a producer writes to every partition: it gets partitions
    (sizes 2/2/1/1) while the three old members keep consuming, each with no gap over MAX_GAP_S
    from the join until a second after the group is stable again, each revoked only partitions
    it gives up (never one it keeps) and never losing any. Nothing is read twice."""
    b = start_broker(broker_factory)
    producer = BackgroundProducer(b.bootstrap, TOPIC, PARTITIONS, "join")
    try:
        group = start_group(members, b.bootstrap, ["a", "b", "c"])
        before = wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
        since = time.monotonic()
        for m in group:
            m.wait_for(lambda m: consumed_after(m, since) >= 20, "steady consumption before the join")
        newcomer = start_group(members, b.bootstrap, ["d"])[0]
        joined = newcomer.wait_for(lambda m: m.first("started"), "subscribe").at
        after = wait_stable(group + [newcomer], PARTITIONS, sizes=[1, 1, 2, 2])
        stable_at = time.monotonic()
        assert stable_at - joined < SESSION_S, f"the join took {stable_at - joined:.1f}s"
        time.sleep(1.0)
        for m in group:
            gap = longest_gap(m.record_times(), joined, stable_at + 1.0)
            assert gap <= MAX_GAP_S, f"{m.name} stopped for {gap:.2f}s during the join\n{m.describe()}"
            assert after[m.name] <= before[m.name], f"{m.name} held {before[m.name]}, now {after[m.name]}"
            for e in m.changes(joined):
                assert e.kind == "revoked", f"{m.name}: unexpected {e.fields} during the join"
                kept = set(e.fields["partitions"]) & after[m.name]
                assert not kept, f"{m.name} was revoked {sorted(kept)}, which it keeps"
        newcomer.wait_for(lambda m: consumed_after(m, stable_at) >= 5, "records after the join")
    finally:
        expected = producer.stop()
    everyone = group + [newcomer]
    wait_consumed(everyone, expected)
    for m in everyone:
        m.close()
    check_exactly_once(everyone, expected)


@pytest.mark.parametrize("how", ["stop", "sigkill"])
def test_committed_offsets_survive_broker_restart(broker_factory, members, how):
    """A consumer group reads and commits everything; the broker goes down (SIGTERM after the
    members left, or SIGKILL under live members) and comes back on the same log dir: the commits
    are there, and a new set of members reads exactly the records produced since. After the
    SIGKILL the group comes back with three members that never heartbeat again; the new members
    get their partitions once the broker has expired those."""
    b = start_broker(broker_factory)
    per_partition = 50
    first = produce_batch(b.bootstrap, TOPIC, PARTITIONS, "before", per_partition)
    group = start_group(members, b.bootstrap, ["a", "b", "c"])
    wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
    wait_consumed(group, first)
    expected_commits = {p: per_partition for p in range(PARTITIONS)}
    deadline = time.monotonic() + 30
    while committed_offsets(b.bootstrap, GROUP, TOPIC, PARTITIONS) != expected_commits:
        assert time.monotonic() < deadline, f"commits {committed_offsets(b.bootstrap, GROUP, TOPIC, PARTITIONS)}"
        time.sleep(0.2)
    check_exactly_once(group, first)

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
    second = produce_batch(b.bootstrap, TOPIC, PARTITIONS, "after", per_partition)
    again = start_group(members, b.bootstrap, ["d", "e", "f"])
    wait_stable(again, PARTITIONS, sizes=[2, 2, 2], timeout=SESSION_S + 30)
    wait_consumed(again, second)
    for m in again:
        m.close()
    check_exactly_once(again, second)
    assert committed_offsets(b.bootstrap, GROUP, TOPIC, PARTITIONS) == {p: 2 * per_partition for p in range(PARTITIONS)}


def test_regex_subscription_picks_up_a_topic_created_later(broker_factory, members):
    """Two members subscribe to `^metrics-.*`: they split metrics-a and never touch other-a; a
    topic metrics-b created later is assigned and read too. librdkafka sends the pattern to the
    broker (SubscribedTopicRegex, resolved by the broker); the Java 3.9 client resolves it itself
    and sends topic names; ConsumerGroupDescribe shows which one the broker got."""
    regex = "^metrics-.*"
    b = broker_factory(BROKER_OVERRIDES).start()
    create_topic(b.bootstrap, "metrics-a", partitions=3)
    create_topic(b.bootstrap, "other-a", partitions=3)
    group = [members.start(n, b.bootstrap, "metrics-a", GROUP, protocol="consumer", regex=regex)
             for n in ["a", "b"]]

    def wait_holding(topics: list[str], timeout: float) -> None:
        want = sorted((t, p) for t in topics for p in range(3))
        deadline = time.monotonic() + timeout
        while True:
            held = [m.held() for m in group]
            if all(h for h in held) and sorted(tp for h in held for tp in h) == want:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"members hold {held}, want {want}\n" + "\n".join(m.describe() for m in group))
            time.sleep(0.1)

    wait_holding(["metrics-a"], 60)
    d = wait_described(b.bootstrap, lambda d: len(d.members) == 2, "two members")
    for m in d.members:
        if members.kind == "confluent":
            assert m.subscribed_topic_regex is not None and regex in m.subscribed_topic_regex, d
            assert m.subscribed_topic_names == [], d
        else:
            assert m.subscribed_topic_regex in (None, ""), d
            assert m.subscribed_topic_names == ["metrics-a"], d

    expected = {}
    for topic in ("metrics-a", "other-a"):
        expected.update({(topic, p, o): v for (p, o), v in produce_batch(b.bootstrap, topic, 3, topic, 10).items()})
    create_topic(b.bootstrap, "metrics-b", partitions=3)
    # Kafka re-resolves a group's regexes at most every 10 s; the Java client sees the topic at
    # its next metadata refresh (1 s here).
    wait_holding(["metrics-a", "metrics-b"], 30)
    expected.update({("metrics-b", p, o): v for (p, o), v in produce_batch(b.bootstrap, "metrics-b", 3, "mb", 10).items()})
    expected = {k: v for k, v in expected.items() if k[0] != "other-a"}
    deadline = time.monotonic() + 30
    while not set(expected) <= {(t, p, o) for m in group for t, p, o, _ in m.topic_records()}:
        assert time.monotonic() < deadline, "\n".join(m.describe() for m in group)
        time.sleep(0.1)
    if members.kind == "java":
        d = wait_described(b.bootstrap, lambda d: all(len(m.subscribed_topic_names) == 2 for m in d.members),
                           "both topics subscribed")
        assert all(m.subscribed_topic_names == ["metrics-a", "metrics-b"] for m in d.members), d
    for m in group:
        m.close()
    exactly_once_by_topic(group, expected)


def test_static_member_restart_keeps_partitions_without_rebalance(broker_factory, members):
    """A static member (group.instance.id) closes (a leave with epoch -2, which keeps its place)
    and a new process with the same instance id comes back within the session timeout: it gets
    exactly its old partitions, the group epoch does not move, and the other members see no
    revocation or assignment; nothing is read twice."""
    session_ms = 15_000  # room for a JVM restart inside the session
    b = start_broker(broker_factory, **{"group.consumer.session.timeout.ms": str(session_ms),
                                        "group.consumer.max.session.timeout.ms": "60000"})
    producer = BackgroundProducer(b.bootstrap, TOPIC, PARTITIONS, "static")
    try:
        group = [members.start(n, b.bootstrap, TOPIC, GROUP, instance=f"static-{n}", protocol="consumer")
                 for n in ["a", "b", "c"]]
        held = wait_stable(group, PARTITIONS, sizes=[2, 2, 2])
        d_before = wait_described(b.bootstrap, lambda d: d.state == "Stable", "a Stable group")
        old, others = group[2], group[:2]
        old.wait_for(lambda m: len(m.records()) >= 5, "records before the restart")
        closing = time.monotonic()
        old.close()
        new = members.start("c", b.bootstrap, TOPIC, GROUP, instance="static-c", protocol="consumer")
        new.wait_for(lambda m: m.assignment(), "the restarted member's assignment")
        assert time.monotonic() - closing < session_ms / 1000, "restart took longer than the session timeout"
        assert new.assignment() == held[old.name], f"restarted member got {new.assignment()}, had {held[old.name]}"
        since = time.monotonic()
        for m in others + [new]:
            m.wait_for(lambda m: consumed_after(m, since) >= 5, "records after the restart")
        for m in others:
            moved = [e.fields for e in m.changes(closing)]
            assert not moved, f"{m.name} saw a rebalance: {moved}"
        d_after = wait_described(b.bootstrap, lambda d: d.state == "Stable" and len(d.members) == 3, "a Stable group")
        assert d_after.group_epoch == d_before.group_epoch, (d_before, d_after)
        static_c = [m for m in d_after.members if m.instance_id == "static-c"]
        assert len(static_c) == 1 and set(static_c[0].assignment[TOPIC]) == held[old.name], d_after
    finally:
        expected = producer.stop()
    everyone = group + [new]
    wait_consumed(everyone, expected)
    for m in others + [new]:
        m.close()
    check_exactly_once(everyone, expected)


def test_classic_group_upgrades_to_consumer_protocol(broker_factory, members):
    """Online migration: two classic members (eager range) hold the partitions; two
    consumer-protocol members join, which turns the group into a consumer group of four
    (ConsumerGroupDescribe finds it; before, it was GROUP_ID_NOT_FOUND); the classic members
    leave and the new ones take everything. Throughout, a producer writes to every partition
    and every record is processed exactly once: partitions change hands only at committed
    offsets."""
    b = start_broker(broker_factory)
    producer = BackgroundProducer(b.bootstrap, TOPIC, PARTITIONS, "upgrade")
    try:
        classic = [members.start(n, b.bootstrap, TOPIC, GROUP) for n in ["a", "b"]]
        wait_stable(classic, PARTITIONS, sizes=[3, 3])
        assert describe(b.bootstrap, GROUP).error_code == 69, "a classic group is not a consumer group"
        for m in classic:
            m.wait_for(lambda m: len(m.records()) >= 5, "records before the upgrade")
        upgraded = start_group(members, b.bootstrap, ["c", "d"])
        wait_stable(classic + upgraded, PARTITIONS, sizes=[1, 1, 2, 2])
        d = wait_described(b.bootstrap, lambda d: len(d.members) == 4, "four members")
        assert sorted(len(a) for a in assignments(d)) == [1, 1, 2, 2], d
        since = time.monotonic()
        for m in upgraded:
            m.wait_for(lambda m: consumed_after(m, since) >= 5, "records after the upgrade")
        for m in classic:
            m.close()
        wait_stable(upgraded, PARTITIONS, sizes=[3, 3])
        d = wait_described(b.bootstrap, lambda d: len(d.members) == 2 and d.state == "Stable", "two Stable members")
        assert assignments(d) == sorted(tuple(sorted(m.assignment())) for m in upgraded), d
        since = time.monotonic()
        for m in upgraded:
            m.wait_for(lambda m: consumed_after(m, since) >= 5, "records after the classic members left")
    finally:
        expected = producer.stop()
    everyone = classic + upgraded
    wait_consumed(everyone, expected)
    for m in upgraded:
        m.close()
    check_exactly_once(everyone, expected)


def test_consumer_group_downgrades_to_classic(broker_factory, members):
    """Online downgrade: two classic members hold the partitions; a consumer-protocol member
    joins (the group becomes a consumer group of three, two partitions each) and then leaves.
    With only classic members left, the broker turns it back into a classic group
    (ConsumerGroupDescribe: GROUP_ID_NOT_FOUND again) and the two rebalance the classic way to
    three partitions each. A producer writes throughout and every record is processed exactly
    once."""
    b = start_broker(broker_factory)
    producer = BackgroundProducer(b.bootstrap, TOPIC, PARTITIONS, "downgrade")
    try:
        classic = [members.start(n, b.bootstrap, TOPIC, GROUP) for n in ["a", "b"]]
        wait_stable(classic, PARTITIONS, sizes=[3, 3])
        upgraded = start_group(members, b.bootstrap, ["c"])
        wait_stable(classic + upgraded, PARTITIONS, sizes=[2, 2, 2])
        wait_described(b.bootstrap, lambda d: len(d.members) == 3 and d.state == "Stable", "three Stable members")
        since = time.monotonic()
        upgraded[0].wait_for(lambda m: consumed_after(m, since) >= 5, "records after the upgrade")
        upgraded[0].close()
        wait_stable(classic, PARTITIONS, sizes=[3, 3])
        assert describe(b.bootstrap, GROUP).error_code == 69, "a classic group again"
        since = time.monotonic()
        for m in classic:
            m.wait_for(lambda m: consumed_after(m, since) >= 5, "records after the downgrade")
    finally:
        expected = producer.stop()
    everyone = classic + upgraded
    wait_consumed(everyone, expected)
    for m in classic:
        m.close()
    check_exactly_once(everyone, expected)
