"""Guards fair service (issue #19, "many clients"): one client that keeps sending large
Fetch requests and never reads its socket must not lower the other consumers' throughput
by more than 10%.

The others are raw Fetch loops reading a fixed amount per run (fair_service.py); runs
without and with the slow client alternate, and the best run of each side is compared:
load from elsewhere on a small CI machine only ever slows a run, while a broker that lets
the slow client hurt the others slows every "with" run (medians are printed too). A broker whose writer waited for
the stuck socket on a shared thread, or held anything shared while it is full, fails
here. More repetitions: bench/slow_consumer_bench.py.
"""

from __future__ import annotations

from fair_service import alternate, best_ratio, prepare_topic, ratio

PARTITIONS = 3
BYTES_PER_PARTITION = 8 << 20
PAIRS = 5
PASSES = 80  # 3 fetchers x 80 x 8 MiB = 1.9 GiB a run
MIN_RATIO = 0.9


def test_a_client_that_never_reads_does_not_slow_the_others(broker_factory):
    broker = broker_factory()
    broker.start()
    ends = prepare_topic(broker.bootstrap, "fair", PARTITIONS, BYTES_PER_PARTITION)
    runs = alternate(broker.port, "fair", ends, PAIRS, PASSES)
    without, with_slow, r = best_ratio(runs)
    medians = ratio(runs)
    detail = ", ".join(f"{'with' if x.with_slow else 'without'} {x.mib_s:.0f}" for x in runs)
    assert r >= MIN_RATIO, (
        f"others' best throughput with a client that never reads: {with_slow:.0f} MiB/s, "
        f"without: {without:.0f} MiB/s (ratio {r:.2f} < {MIN_RATIO}; medians {medians[2]:.2f}); runs: {detail}"
    )
    # The broker still serves the stuck client's partition to everyone, data intact
    # (every run above checked each fetcher reached the end offset).
    assert all(x.bytes >= PARTITIONS * PASSES * BYTES_PER_PARTITION for x in runs)
