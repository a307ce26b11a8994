#!/usr/bin/env bash
# Group-traffic benchmark (not part of scripts/test.sh): builds a plain release broker, then runs
# bench/groups_bench.py, which measures librdkafka produce/consume throughput with and without a
# consumer group (heartbeats every 500 ms, a commit per member every second) in alternating rounds
# on one broker and prints the with-group / baseline ratios. Extra arguments go to groups_bench.py
# (e.g. --rounds 5 --json out.json).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi
exec .test-deps/venv/bin/python bench/groups_bench.py --strata "$STRATA_BIN" "$@"
