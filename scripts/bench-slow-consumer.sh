#!/usr/bin/env bash
# Slow-consumer benchmark (not part of scripts/test.sh): builds a plain release broker, then runs
# bench/slow_consumer_bench.py: raw fetchers' throughput with and without one client that sends
# large Fetch requests and never reads its socket, alternating runs, medians and their ratio.
# Extra arguments go to slow_consumer_bench.py (e.g. --pairs 20 --json out.json).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi
exec .test-deps/venv/bin/python bench/slow_consumer_bench.py --strata "$STRATA_BIN" "$@"
