#!/usr/bin/env bash
# Broker throughput benchmark (not part of scripts/test.sh): builds a plain release broker,
# then runs bench/broker_bench.py, which produces and consumes 1,000,000 x 100 B and
# 200,000 x 1 KiB records with librdkafka and compares a raw Fetch loop with a loopback
# copy of the same bytes. Extra arguments go to broker_bench.py (e.g. --json out.json).
# Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
cargo build --release -p strata
exec .test-deps/venv/bin/python bench/broker_bench.py --strata "$TARGET_DIR/release/strata" "$@"
