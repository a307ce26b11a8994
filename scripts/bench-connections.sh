#!/usr/bin/env bash
# Many-connections benchmark (not part of scripts/test.sh): builds a plain release broker, then
# runs bench/connections_bench.py: the broker's RSS per idle connection (5,000 of them), and
# 1,000 producer connections at 20 records/s each (1 KiB, acks=1) against the same total rate
# from 10 connections, alternating; one table with throughput, p50/p99/p99.9 latency, RSS and
# CPU. Extra arguments go to connections_bench.py (e.g. --rounds 3 --json out.json).
# Results are recorded in docs/benchmarks.md ("Many connections").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi
exec .test-deps/venv/bin/python bench/connections_bench.py --strata "$STRATA_BIN" "$@"
