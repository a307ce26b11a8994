"""Fair service with a client that never reads: the others' fetch throughput with and without it.

The heavier version of tests/clients/test_slow_consumer.py (same code, fair_service.py): more
alternating pairs and more data per run. One release `strata serve` on a temporary log dir;
FETCHERS raw Fetch loops (one per partition of PARTITION_MIB MiB of 1 KiB records) read PASSES
times their partition per run; in every other run one client has sent 20 pipelined 50 MiB Fetch
requests and never reads its socket. Prints each run, the medians and their ratio (the issue's
bar: at least 0.90), with `--json` for the record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))

from broker import StrataBroker  # noqa: E402
from fair_service import alternate, prepare_topic, ratio  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strata", type=Path, required=True, help="the strata binary (release build)")
    parser.add_argument("--fetchers", type=int, default=4)
    parser.add_argument("--partition-mib", type=int, default=16)
    parser.add_argument("--passes", type=int, default=6)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="strata-slow-bench-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "out").mkdir()
        broker = StrataBroker(args.strata, tmp_path / "data", tmp_path / "out")
        broker.start()
        try:
            ends = prepare_topic(broker.bootstrap, "fair", args.fetchers, args.partition_mib << 20)
            runs = alternate(broker.port, "fair", ends, args.pairs, args.passes)
        except BaseException:
            print(broker.output_tail(), file=sys.stderr)
            raise
        finally:
            broker.stop()
    for i, r in enumerate(runs):
        print(f"run {i:>2} {'with   ' if r.with_slow else 'without'} {r.mib_s:>8.0f} MiB/s ({r.seconds:.2f} s)")
    without, with_slow, rat = ratio(runs)
    print(f"load average at start {load:.2f}; {args.fetchers} fetchers x {args.passes} passes x "
          f"{args.partition_mib} MiB per run, {args.pairs} pairs")
    print(f"{'median without':<16} {without:>8.0f} MiB/s")
    print(f"{'median with':<16} {with_slow:>8.0f} MiB/s")
    print(f"{'with / without':<16} {rat:>8.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "load_average": load, "without_mib_s": without, "with_mib_s": with_slow, "ratio": rat,
            "runs": [{"with_slow": r.with_slow, "seconds": r.seconds, "bytes": r.bytes} for r in runs],
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
