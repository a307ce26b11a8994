#!/usr/bin/env bash
# Start a loopback S3-API server (moto's server mode) for tiered-storage tests and demos.
#
#   scripts/start-s3.sh [bucket]
#
# Listens on 127.0.0.1:<free port>, creates the bucket (default: strata-tier), and prints
# the broker settings to use, e.g.
#   strata.remote.storage.uri=s3://strata-tier/cluster-1
#   rsm.config.s3.endpoint=http://127.0.0.1:40123
# The server's pid is in $MOTO_PIDFILE (default .test-deps/moto.pid); stop it with
#   kill "$(cat .test-deps/moto.pid)"
# moto comes from scripts/install-test-deps.sh (.test-deps/venv) or anywhere on PATH.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUCKET=${1:-strata-tier}
PIDFILE=${MOTO_PIDFILE:-$ROOT/.test-deps/moto.pid}
MOTO=$ROOT/.test-deps/venv/bin/moto_server
if [ ! -x "$MOTO" ]; then
  MOTO=$(command -v moto_server || true)
fi
if [ -z "$MOTO" ]; then
  echo "start-s3: moto_server not found; run scripts/install-test-deps.sh" >&2
  exit 1
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$(dirname "$PIDFILE")"
"$MOTO" -H 127.0.0.1 -p "$PORT" >"${PIDFILE%.pid}.log" 2>&1 &
echo $! >"$PIDFILE"
for _ in $(seq 1 300); do
  if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null; then
    curl -fsS -o /dev/null -X PUT "http://127.0.0.1:$PORT/$BUCKET"
    cat <<SETTINGS
remote.log.storage.system.enable=true
strata.remote.storage.uri=s3://$BUCKET/cluster-1
rsm.config.s3.endpoint=http://127.0.0.1:$PORT
rsm.config.s3.region=us-east-1
rsm.config.s3.access.key.id=testing
rsm.config.s3.secret.access.key=testing
SETTINGS
    exit 0
  fi
  sleep 0.1
done
echo "start-s3: moto did not answer on port $PORT within 30 s" >&2
kill "$(cat "$PIDFILE")" 2>/dev/null || true
exit 1
