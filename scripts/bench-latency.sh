#!/usr/bin/env bash
# End-to-end latency at a fixed rate (not part of scripts/test.sh): builds a plain release
# broker, then runs bench/latency_bench.py, which measures the maximum throughput of its own
# load generator and then p50/p99/p99.9 from produce time to consumer receipt at 10%, 50% and
# 80% of it, with strata.durable.append off and on. Extra arguments go to latency_bench.py
# (e.g. --producers 3, --json out.json). Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
cargo build --release -p strata
exec .test-deps/venv/bin/python bench/latency_bench.py --strata "$TARGET_DIR/release/strata" "$@"
