#!/usr/bin/env bash
# Three-broker cluster vs one broker (not part of scripts/test.sh): builds a plain release
# broker, then runs bench/cluster_bench.py, which starts one etcd, three cluster brokers and a
# single-node broker on loopback, and in the same run produces and consumes 600,000 x 100 B
# records through each setup over 6 partitions (one producer, one consumer, then 3 producer
# processes at once), printing records/s, MB/s and cluster / single for each phase.
# Extra arguments go to cluster_bench.py (e.g. --json out.json, --rounds 5, --logs DIR).
# Needs etcd (installed by install-test-deps.sh, or STRATA_ETCD) and protoc for the build
# (ensure-build-deps.sh).
# Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
scripts/ensure-build-deps.sh
ETCD=${STRATA_ETCD:-$(command -v etcd || true)}
if [ -z "$ETCD" ] || [ ! -x "$ETCD" ]; then
  echo "bench-cluster: etcd not found (install Debian's etcd-server, or set STRATA_ETCD)" >&2
  exit 1
fi
export STRATA_ETCD=$ETCD
cargo build --release -p strata
exec .test-deps/venv/bin/python bench/cluster_bench.py --strata "$TARGET_DIR/release/strata" "$@"
