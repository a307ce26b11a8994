#!/usr/bin/env bash
# Rebalance benchmark (not part of scripts/test.sh): builds a plain release broker, then runs
# bench/rebalance_bench.py, which measures a member join and a member loss (SIGKILL) with the
# classic and the KIP-848 consumer protocol in the same run on one broker, with the Java client and
# librdkafka: time until every partition is consumed again, and the longest stop of the members
# that stay. Extra arguments go to rebalance_bench.py (e.g. --rounds 5 --clients java
# --protocols classic --json out.json).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi
exec .test-deps/venv/bin/python bench/rebalance_bench.py --strata "$STRATA_BIN" "$@"
