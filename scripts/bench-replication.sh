#!/usr/bin/env bash
# Replication's cost and failover times (not part of scripts/test.sh): builds a plain release
# broker, then runs bench/replication_bench.py, which starts one etcd and three cluster brokers on
# loopback and in one run produces 100,000 x 1 KiB records per setup over 6 partitions with
# acks=1 and replication factor 1, acks=1 with 3 and acks=all with 3 (printing each and
# acks=all RF 3 / acks=1 RF 1), then measures failover (leader SIGKILL -> first acknowledged
# produce on the new leader) and controlled shutdown (leader SIGTERM -> first acknowledged
# produce, and -> exit) over several trials, with the settings that bound them.
# Where replication factor 3 is refused it prints "RF 3 unavailable" for those parts.
# Extra arguments go to replication_bench.py (e.g. --json out.json, --rounds 5, --trials 10,
# --logs DIR). STRATA_BIN skips the build and uses that binary.
# Needs etcd (installed by install-test-deps.sh, or STRATA_ETCD) and protoc for the build
# (ensure-build-deps.sh). Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

scripts/install-test-deps.sh
ETCD=${STRATA_ETCD:-$(command -v etcd || true)}
if [ -z "$ETCD" ] || [ ! -x "$ETCD" ]; then
  echo "bench-replication: etcd not found (install Debian's etcd-server, or set STRATA_ETCD)" >&2
  exit 1
fi
export STRATA_ETCD=$ETCD
if [ -z "${STRATA_BIN:-}" ]; then
  scripts/ensure-build-deps.sh
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi
exec .test-deps/venv/bin/python bench/replication_bench.py --strata "$STRATA_BIN" "$@"
