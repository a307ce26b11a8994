"""Client quotas seen by the Java client (issue 17): a producer over its `producer_byte_rate`
is throttled (the broker answers `throttle_time_ms` > 0, which the producer reports as its
`produce-throttle-time-max`) and the rate it gets stays within 10% of the quota over ten
seconds; the quota is set and read back with the Admin API (AlterClientQuotas /
DescribeClientQuotas) and survives a broker restart.
"""

from __future__ import annotations

from records import create_topic

QUOTA = 262_144.0  # bytes per second
# Three one-second samples: the rate (and so the throttle) follows the producer within seconds
# rather than Kafka's default eleven.
BROKER = {"quota.window.num": "3", "quota.window.size.seconds": "1"}


def test_java_producer_over_its_quota_is_throttled_to_the_quota(broker_factory, java):
    broker = broker_factory(BROKER).start()
    create_topic(broker.bootstrap, "quota", partitions=1)
    lines = java.run("QuotaProduce", broker.bootstrap, "quota", "limited", QUOTA, 3, 10)
    described = next(l for l in lines if l["event"] == "described")
    assert described["producer_byte_rate"] == QUOTA
    result = next(l for l in lines if l["event"] == "result")
    assert result["throttle_time_max_ms"] > 0, result
    rate = result["bytes_per_second"]
    # The measured bytes are record values; each 1 KiB value travels with a few bytes of record
    # and batch framing, which the quota also counts.
    assert 0.90 * QUOTA <= rate <= 1.10 * QUOTA, f"rate {rate:.0f} B/s for a quota of {QUOTA:.0f} B/s"

    # The quota is kept: after a restart it is still described and still applies.
    broker.stop()
    broker.start()
    lines = java.run("QuotaProduce", broker.bootstrap, "quota", "limited", QUOTA, 0, 3)
    result = next(l for l in lines if l["event"] == "result")
    assert result["throttle_time_max_ms"] > 0, result
