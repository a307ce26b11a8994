#!/usr/bin/env bash
# Runs a local Strata cluster on loopback: one etcd and three brokers (node.id 1, 2, 3 on
# racks r1, r2, r3), each with its own data under one directory. Builds nothing: it runs
# target/release/strata, or $STRATA_BIN.
#
#   scripts/local-cluster.sh [--dir DIR] [--base-port PORT] [--etcd-port PORT]
#
#   --dir DIR          data and logs (default ./local-cluster); kept between runs, so a
#                      second run brings the same cluster back (delete DIR to start afresh)
#   --base-port PORT   broker N listens on PORT+N-1 (default 9092: 9092, 9093, 9094)
#   --etcd-port PORT   etcd's client port (default 2379); its peer port is PORT+1
#   (Ports below 32768 stay clear of the ports Linux gives outgoing connections, which
#   may otherwise hold one at the moment a broker binds it.)
#
# Prints the bootstrap servers once every broker accepts connections, then runs until
# Ctrl-C or SIGTERM, which stop the brokers and then etcd. If any process exits on its
# own, the script stops the rest and exits non-zero.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=./local-cluster
BASE_PORT=9092
ETCD_PORT=2379
BROKERS=3
READY_TIMEOUT_S=30

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
log() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --base-port) BASE_PORT=${2:?--base-port needs a value}; shift 2 ;;
    --etcd-port) ETCD_PORT=${2:?--etcd-port needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

BIN=${STRATA_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/strata}
[ -x "$BIN" ] || die "no broker binary at $BIN: run \`cargo build --release -p strata\` or set STRATA_BIN"
ETCD=$(command -v etcd || true)
[ -n "$ETCD" ] || die "etcd not found: install Debian's etcd-server (scripts/install-test-deps.sh does)"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
ETCD_URL="http://127.0.0.1:$ETCD_PORT"
PEER_URL="http://127.0.0.1:$((ETCD_PORT + 1))"

port_accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

for port in "$ETCD_PORT" "$((ETCD_PORT + 1))" $(seq "$BASE_PORT" $((BASE_PORT + BROKERS - 1))); do
  if port_accepts "$port"; then
    die "127.0.0.1:$port is in use (another local cluster?); pick other ports with --base-port / --etcd-port"
  fi
done

PIDS=()      # every process started, etcd first
NAMES=()     # what each is, for messages
LOGS=()      # its output file

stop_all() {
  trap - INT TERM EXIT
  local i pid
  # Brokers first (newest first), while etcd is still there for them to leave cleanly.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "${NAMES[i]} ignored SIGTERM for 10 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

# Each process gets a session of its own, so Ctrl-C reaches only this script, which stops
# the brokers before etcd. (Without job control the child is no process-group leader, so
# setsid execs in place and $! is the process itself.)
start() {  # start NAME LOGFILE COMMAND...
  local name=$1 out=$2
  shift 2
  setsid "$@" >"$out" 2>&1 </dev/null &
  PIDS+=($!)
  NAMES+=("$name")
  LOGS+=("$out")
}

# Waits until CHECK succeeds for process number INDEX (in start order); fails if the
# process exits first or the check does not pass in time.
wait_ready() {  # wait_ready INDEX CHECK...
  local i=$1 deadline=$((SECONDS + READY_TIMEOUT_S))
  shift
  until "$@"; do
    if ! kill -0 "${PIDS[i]}" 2>/dev/null; then
      log "${NAMES[i]} exited before it was ready; the end of ${LOGS[i]}:"
      tail -n 30 "${LOGS[i]}" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "${NAMES[i]} not ready within ${READY_TIMEOUT_S} s; see ${LOGS[i]}"
      exit 1
    fi
    sleep 0.1
  done
}

# etcd says "health":"true" once it has a leader and can commit.
etcd_healthy() {
  local body
  body=$(
    exec 2>/dev/null 3<>"/dev/tcp/127.0.0.1/$ETCD_PORT" || exit 1
    printf 'GET /health HTTP/1.0\r\n\r\n' >&3
    timeout 2 cat <&3
  ) || return 1
  [[ $body == *'"health":"true"'* ]]
}

mkdir -p "$DIR/etcd"
start etcd "$DIR/etcd.log" "$ETCD" --name local --data-dir "$DIR/etcd/data" \
  --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
  --listen-peer-urls "$PEER_URL" --initial-advertise-peer-urls "$PEER_URL" \
  --initial-cluster "local=$PEER_URL" --initial-cluster-state new \
  --initial-cluster-token strata-local-cluster --logger zap --log-outputs stderr
wait_ready 0 etcd_healthy

BOOTSTRAP=()
for node in $(seq 1 "$BROKERS"); do
  port=$((BASE_PORT + node - 1))
  mkdir -p "$DIR/broker-$node"
  start "broker $node" "$DIR/broker-$node.log" env RUST_LOG="${RUST_LOG:-info}" NO_COLOR=1 \
    "$BIN" serve \
    --override "node.id=$node" \
    --override "broker.rack=r$node" \
    --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "log.dirs=$DIR/broker-$node/data" \
    --override "strata.metadata.etcd.endpoints=$ETCD_URL"
  BOOTSTRAP+=("127.0.0.1:$port")
done
# Started together (a broker may wait for its peers before it listens); now wait for each.
for node in $(seq 1 "$BROKERS"); do
  wait_ready "$node" port_accepts $((BASE_PORT + node - 1))  # PIDS[0] is etcd
done

joined=$(IFS=,; echo "${BOOTSTRAP[*]}")
echo "bootstrap servers: $joined"
echo "etcd: $ETCD_URL (prefix /strata); data and logs in $DIR (etcd.log, broker-N.log)"
echo "try: kcat -b $joined -L    stop: Ctrl-C"

# Run until a signal arrives or one of the processes exits on its own.
set +e
wait -n "${PIDS[@]}"
code=$?
set -e
for i in "${!PIDS[@]}"; do
  if ! kill -0 "${PIDS[i]}" 2>/dev/null; then
    log "${NAMES[i]} exited (code $code); stopping the rest. The end of ${LOGS[i]}:"
    tail -n 30 "${LOGS[i]}" >&2
    break
  fi
done
exit 1
