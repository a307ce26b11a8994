#!/usr/bin/env bash
# Transactional producer throughput (not part of scripts/test.sh): builds a plain release broker
# (STRATA_BIN skips the build), starts one `strata serve` on a free loopback port and a temporary
# log dir, and runs tests/clients/java/TxnBench.java with the Java client: COUNT records of
# 1 KiB over 3 partitions per run with a plain idempotent producer (acks=all) and with
# transactional producers committing every 100 and every 1,000 records, ROUNDS rounds in rotated
# order after one unreported warm-up run of each. Prints records/s per run (and the mean time of
# a commitTransaction() call), then per mode the median and its ratio to the idempotent producer. Settings: COUNT (default 100000), ROUNDS
# (default 3), SIZE (default 1024); extra arguments are TxnBench modes (default: idempotent
# txn:100 txn:1000).
# Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
COUNT=${COUNT:-100000}
ROUNDS=${ROUNDS:-3}
SIZE=${SIZE:-1024}
MODES=("$@")
[ ${#MODES[@]} -gt 0 ] || MODES=(idempotent txn:100 txn:1000)

scripts/install-test-deps.sh
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata
  STRATA_BIN=$TARGET_DIR/release/strata
fi

WORK=$(mktemp -d)
BROKER_PID=
cleanup() {
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill "$BROKER_PID"
    wait "$BROKER_PID" || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

JARS="$ROOT/.test-deps/jars/*"
mkdir "$WORK/classes"
javac -cp "$JARS" -d "$WORK/classes" tests/clients/java/Json.java tests/clients/java/TxnBench.java

PORT=$(.test-deps/venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
NO_COLOR=1 "$STRATA_BIN" serve --override "listeners=PLAINTEXT://127.0.0.1:$PORT" --override "log.dirs=$WORK/data" \
  --override transaction.state.log.replication.factor=1 --override transaction.state.log.min.isr=1 \
  >"$WORK/broker.log" 2>&1 &
BROKER_PID=$!
for _ in $(seq 1 300); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  if ! kill -0 "$BROKER_PID" 2>/dev/null; then
    cat "$WORK/broker.log" >&2
    echo "bench-transactions: the broker exited before listening" >&2
    exit 1
  fi
  sleep 0.1
done

echo "bench-transactions: $COUNT x $SIZE B records per run, $ROUNDS rounds, modes: ${MODES[*]}"
if ! java -cp "$WORK/classes:$JARS" TxnBench "127.0.0.1:$PORT" txn-bench 3 "$COUNT" "$SIZE" "$ROUNDS" "${MODES[@]}" \
    >"$WORK/out.jsonl"; then
  tail -50 "$WORK/broker.log" >&2
  exit 1
fi
.test-deps/venv/bin/python - "$WORK/out.jsonl" <<'PY'
import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
for r in (x for x in lines if x["event"] == "run"):
    commit = "" if r["mode"] == "idempotent" else f"  commitTransaction {r['meanCommitMs']} ms mean"
    print(f"round {r['round']}  {r['mode']:<11} {r['recordsPerSec']:>9} records/s {r['mibPerSec']:>7} MiB/s{commit}")
print("median records/s (ratio to the idempotent producer):")
for s in (x for x in lines if x["event"] == "summary"):
    ratio = "-" if s["ratioToIdempotent"] is None else f"{s['ratioToIdempotent']:.2f}"
    print(f"  {s['mode']:<11} {s['medianRecordsPerSec']:>9}  ({ratio})")
PY
