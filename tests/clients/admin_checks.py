"""Checks of the Java Admin client's topic walk, shared by the single-node and cluster suites."""

from __future__ import annotations


def assert_admin_round_trip(java, bootstrap: str, topic: str) -> None:
    """Runs the Java Admin walk (AdminOps.java) of `topic` against `bootstrap` and checks every step."""
    lines = {line["event"]: line for line in java.run("AdminOps", bootstrap, topic)}
    assert lines["created"]["partitions"] == 3
    assert lines["created"]["replicationFactor"] == 1
    assert lines["duplicateCreate"]["error"] == "TopicExistsException"
    assert lines["describedTopic"] == {"event": "describedTopic", "partitions": 3, "internal": False}

    def entries(event):
        return {e["name"]: e for e in lines[event]["entries"]}

    before = entries("configBeforeAlter")
    assert (before["cleanup.policy"]["value"], before["cleanup.policy"]["source"]) == ("compact", "DYNAMIC_TOPIC_CONFIG")
    assert (before["min.compaction.lag.ms"]["value"], before["min.compaction.lag.ms"]["source"]) == (
        "60000", "DYNAMIC_TOPIC_CONFIG")
    assert (before["retention.ms"]["value"], before["retention.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG")
    assert before["segment.bytes"]["value"] == "1073741824"
    assert lines["configBeforeAlter"]["count"] > 20, "a topic describes all of its configs, not just overrides"

    after = entries("configAfterAlter")
    assert (after["retention.ms"]["value"], after["retention.ms"]["source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert (after["min.compaction.lag.ms"]["value"], after["min.compaction.lag.ms"]["source"]) == (
        "0", "DEFAULT_CONFIG")
    assert after["cleanup.policy"]["value"] == "compact"

    assert lines["deleted"]["stillListed"] is False
