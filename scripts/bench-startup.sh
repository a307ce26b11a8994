#!/usr/bin/env bash
# Start-up and many-partitions benchmark (not part of scripts/test.sh): builds a plain release
# broker, then runs bench/startup_bench.py, which fills 100, 1,000 and 10,000 partitions,
# restarts the broker cleanly and after SIGKILL, and prints time-to-ready, idle RSS and open
# descriptors next to a walk+stat of the same data dir and an empty broker. Extra arguments
# go to startup_bench.py (e.g. --json out.json, --partitions 100 1000).
# Results are recorded in docs/benchmarks.md ("Start-up and many partitions").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
cargo build --release -p strata
exec .test-deps/venv/bin/python bench/startup_bench.py --strata "$TARGET_DIR/release/strata" "$@"
