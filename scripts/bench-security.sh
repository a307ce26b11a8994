#!/usr/bin/env bash
# What TLS and SASL cost (not part of scripts/test.sh): builds a plain release broker (STRATA_BIN
# skips the build), makes test certificates with tests/clients/pki.py (openssl, keytool) in a
# temporary dir, starts one `strata serve` with three listeners on free loopback ports -
# PLAINTEXT, SSL (PKCS12 keystore) and SASL_SSL (SCRAM-SHA-512, user created with the Java Admin's
# alterUserScramCredentials) - and runs tests/clients/java/SecurityBench.java over each in turn,
# ROUNDS rounds in rotated order: the default Java producer (idempotent, acks=all) sends COUNT
# records of SIZE bytes to a new 3-partition topic, then a consumer reads them back; each run is
# preceded by an unreported warm-up. Prints produce and consume throughput (MB/s, records/s) per
# run, then per listener the medians and their ratios to PLAINTEXT. Settings: COUNT (default
# 200000), SIZE (default 1024), ROUNDS (default 3).
# Results are recorded in docs/benchmarks.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
COUNT=${COUNT:-200000}
SIZE=${SIZE:-1024}
ROUNDS=${ROUNDS:-3}
PY=.test-deps/venv/bin/python

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
javac -cp "$JARS" -d "$WORK/classes" tests/clients/java/Json.java tests/clients/java/SecureClient.java \
  tests/clients/java/SecurityBench.java

# Certificates; prints shell assignments of the paths and passwords the settings below use.
eval "$("$PY" - "$WORK/pki" <<'PY'
import shlex
import sys
from pathlib import Path

sys.path.insert(0, "tests/clients")
from pki import make_pki

pki = make_pki(Path(sys.argv[1]))
for name, value in {
    "BROKER_P12": pki.broker.p12, "BROKER_PW": pki.broker.password,
    "TRUST_P12": pki.truststore, "TRUST_PW": pki.truststore_password,
}.items():
    print(f"{name}={shlex.quote(str(value))}")
PY
)"
SCRAM_PW=bench-scram-password
SCRAM_JAAS="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bench\" password=\"$SCRAM_PW\";"

NO_COLOR=1 "$STRATA_BIN" serve --override log.dirs="$WORK/data" \
  --override "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0" \
  --override ssl.keystore.type=PKCS12 --override "ssl.keystore.location=$BROKER_P12" \
  --override "ssl.keystore.password=$BROKER_PW" \
  --override listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512 \
  >"$WORK/broker.log" 2>&1 &
BROKER_PID=$!
LISTENING=
for _ in $(seq 1 300); do
  LISTENING=$(grep -o 'listening on .* (cluster id' "$WORK/broker.log" || true)
  if [ -n "$LISTENING" ]; then break; fi
  if ! kill -0 "$BROKER_PID" 2>/dev/null; then
    cat "$WORK/broker.log" >&2
    echo "bench-security: the broker exited before listening" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$LISTENING" ]; then
  echo "bench-security: the broker did not listen within 30 s" >&2
  exit 1
fi
# "listening on PLAINTEXT 127.0.0.1:p1, SSL 127.0.0.1:p2, ... (cluster id"
port_of() { sed -E "s/.*[ ,]$1 127\.0\.0\.1:([0-9]+).*/\1/" <<<"$LISTENING"; }
PLAINTEXT_ADDR=127.0.0.1:$(port_of PLAINTEXT)
SSL_ADDR=127.0.0.1:$(port_of SSL)
SASL_SSL_ADDR=127.0.0.1:$(port_of SASL_SSL)

CP="$WORK/classes:$JARS"
# The jars have no SLF4J binding: its three-line notice per JVM is dropped, other stderr kept.
quiet_slf4j() { grep -v '^SLF4J: ' >&2 || true; }
java -cp "$CP" SecureClient scram-users "$PLAINTEXT_ADDR" "bench:SCRAM-SHA-512:$SCRAM_PW:4096" >/dev/null 2> >(quiet_slf4j)

TLS_CLIENT=(ssl.truststore.type=PKCS12 "ssl.truststore.location=$TRUST_P12" "ssl.truststore.password=$TRUST_PW")
run() {
  local name=$1 round=$2 addr=$3
  shift 3
  if ! java -cp "$CP" SecurityBench "$addr" "bench-$name-$round" "$COUNT" "$SIZE" "$@" 2> >(quiet_slf4j) \
      | sed "s/^{/{\"listener\":\"$name\",\"round\":$round,/" >>"$WORK/out.jsonl"; then
    tail -50 "$WORK/broker.log" >&2
    exit 1
  fi
}
run_listener() {
  case $1 in
    PLAINTEXT) run PLAINTEXT "$2" "$PLAINTEXT_ADDR" ;;
    SSL) run SSL "$2" "$SSL_ADDR" security.protocol=SSL "${TLS_CLIENT[@]}" ;;
    SASL_SSL) run SASL_SSL "$2" "$SASL_SSL_ADDR" security.protocol=SASL_SSL "${TLS_CLIENT[@]}" \
      sasl.mechanism=SCRAM-SHA-512 "sasl.jaas.config=$SCRAM_JAAS" ;;
  esac
}

LISTENERS=(PLAINTEXT SSL SASL_SSL)
echo "bench-security: $COUNT x $SIZE B records per run, $ROUNDS rounds, one broker, listeners ${LISTENERS[*]} (SCRAM-SHA-512)"
for round in $(seq 0 $((ROUNDS - 1))); do
  # Each round in a rotated order, so drift and order effects fall on every listener alike.
  for i in 0 1 2; do
    run_listener "${LISTENERS[$(((i + round) % 3))]}" "$round"
  done
done

"$PY" - "$WORK/out.jsonl" <<'PY'
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
listeners = ("PLAINTEXT", "SSL", "SASL_SSL")
for r in rows:
    print(f"round {r['round']}  {r['event']:<7} {r['listener']:<10} {r['mbPerSec']:>8.2f} MB/s {r['recordsPerSec']:>9} records/s")
for phase in ("produce", "consume"):
    runs = {name: [r for r in rows if r["listener"] == name and r["event"] == phase] for name in listeners}
    median = {name: statistics.median(r["recordsPerSec"] for r in runs[name]) for name in listeners}
    median_mb = {name: statistics.median(r["mbPerSec"] for r in runs[name]) for name in listeners}
    print(f"{phase}, median of {len(runs['PLAINTEXT'])} (ratio to PLAINTEXT):")
    for name in listeners:
        print(f"  {name:<10} {median_mb[name]:>8.2f} MB/s {median[name]:>9.0f} records/s"
              f"  ({median[name] / median['PLAINTEXT']:.2f})")
PY
echo "kTLS (kernel TLS offload) is not implemented yet: SSL and SASL_SSL encrypt in user space (rustls)."
