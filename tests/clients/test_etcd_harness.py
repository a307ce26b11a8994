"""The etcd harness the cluster tests stand on (etcd.py): a one-member etcd serves, keeps its
data across a restart, and a three-member etcd commits with one member down and refuses with
two down, so a cluster test's "etcd is unavailable" really is.

Needs no broker: a failure here is the harness or the etcd install, not Strata.
"""

from __future__ import annotations

from cluster import wait_until
from etcd import etcdctl


def put(endpoints: str, key: str, value: str):
    # Room for an election (a stopped member may have led) on a busy two-core machine.
    return etcdctl(endpoints, "put", key, value, timeout_s=5)


def get(endpoints: str, key: str) -> str | None:
    proc = etcdctl(endpoints, "get", "--print-value-only", key)
    assert proc.returncode == 0, f"etcdctl get failed: {proc.stderr}"
    lines = proc.stdout.splitlines()
    return lines[0] if lines else None


def test_single_member_serves_and_keeps_data_across_restart(etcd):
    proc = put(etcd.endpoint, "/harness/k", "v1")
    assert proc.returncode == 0, proc.stderr
    assert get(etcd.endpoint, "/harness/k") == "v1"

    etcd.kill()
    assert put(etcd.endpoint, "/harness/k", "v2").returncode != 0
    etcd.start()  # same data dir and ports
    assert get(etcd.endpoint, "/harness/k") == "v1"
    assert put(etcd.endpoint, "/harness/k", "v2").returncode == 0
    assert get(etcd.endpoint, "/harness/k") == "v2"


def test_three_members_tolerate_one_stopped_member_not_two(etcd_cluster):
    endpoints = etcd_cluster.endpoints
    assert endpoints.count(",") == 2
    proc = put(endpoints, "/harness/k", "all")
    assert proc.returncode == 0, proc.stderr
    # Written through one member, read through each: they form one cluster.
    for member in etcd_cluster.members:
        assert get(member.endpoint, "/harness/k") == "all"

    etcd_cluster.stop(0)
    assert put(endpoints, "/harness/k", "one-down").returncode == 0
    assert get(etcd_cluster.running_endpoints(), "/harness/k") == "one-down"

    etcd_cluster.stop(1)
    proc = put(endpoints, "/harness/k", "two-down")
    assert proc.returncode != 0, "a put with two of three members down must not commit"

    # Back to a quorum. The failed put's outcome is unknown (the surviving member may have
    # logged it and commits it once a peer returns), so only later writes are checked.
    etcd_cluster.start_all()
    assert get(endpoints, "/harness/k") in ("one-down", "two-down")
    assert put(endpoints, "/harness/k", "again").returncode == 0
    for member in etcd_cluster.members:
        assert get(member.endpoint, "/harness/k") == "again"


def test_a_killed_member_restarts_and_catches_up(etcd_cluster):
    etcd_cluster.kill(2)
    # A put in flight when a SIGKILLed leader disappears fails after etcd's request timeout
    # (about 6 s) with an unknown outcome; a clean stop hands leadership over first (above).
    wait_until(lambda: put(etcd_cluster.running_endpoints(), "/harness/late", "x").returncode == 0, 30,
               "a put to the two members left")
    etcd_cluster.start(2)
    member = etcd_cluster.members[2]

    def local_value() -> bool:
        # A serializable read answers from the member's own copy: it shows what it caught up on.
        proc = etcdctl(member.endpoint, "get", "--consistency=s", "--print-value-only", "/harness/late")
        return proc.returncode == 0 and proc.stdout.splitlines()[:1] == ["x"]

    wait_until(local_value, 10, "the restarted member to hold the key written while it was down")
