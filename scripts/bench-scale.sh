#!/usr/bin/env bash
# Throughput across partitions (not part of scripts/test.sh): builds a plain release broker,
# then runs bench/scale_bench.py, which produces and consumes the same bytes (200,000 x 1 KiB
# records by default) with librdkafka over topics of 1, 10, 100 and 1,000 partitions and
# prints each figure as a ratio to the 1-partition one. Extra arguments go to scale_bench.py
# (e.g. --rounds 5, --json out.json). Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
cargo build --release -p strata
exec .test-deps/venv/bin/python bench/scale_bench.py --strata "$TARGET_DIR/release/strata" "$@"
