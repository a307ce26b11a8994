#!/usr/bin/env bash
# Installs everything Strata's test command needs beyond the Rust toolchain:
#   - kcat (librdkafka's command-line client), a JDK (javac), etcd and etcdctl (the
#     cluster tests' metadata store), protoc (the build needs it: see
#     scripts/ensure-build-deps.sh) and headless Chromium with chromium-driver (the
#     storage-console test) from Debian packages,
#   - a Python venv in .test-deps/venv with pytest, confluent-kafka, kafka-python and selenium,
#   - the Java Kafka client 3.9.1 and its codec jars in .test-deps/jars
#     (taken from the shigawire-apache-flink-libraries wheel, which ships them),
#     and Jackson (Debian's libjackson2-databind-java, linked into .test-deps/jars): the Java
#     client's OAUTHBEARER unsecured login module parses its token with it,
#   - the rustfmt and clippy components.
# Idempotent: each step checks first and does nothing when already done, so a
# second run takes a second or two.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEPS="$ROOT/.test-deps"
VENV="$DEPS/venv"
JARS="$DEPS/jars"

PY_REQUIREMENTS=(
  "pytest>=8,<9"
  "confluent-kafka==2.16.1"
  "kafka-python==3.0.12"
  "moto[server]>=5.1,<6"  # loopback S3-API server for the tiered-storage tests (scripts/start-s3.sh)
  "selenium>=4.20,<5"  # drives headless Chromium in the storage-console test (tests/clients/test_console.py)
)
JAR_WHEEL="shigawire-apache-flink-libraries==2.0.0.post1"
# Jars needed by the Java client tests: the client itself, its codecs and its logging API.
JAR_NAMES=(kafka-clients.jar lz4-java.jar snappy-java.jar zstd-jni.jar slf4j-api.jar)

log() { printf 'install-test-deps: %s\n' "$*" >&2; }

# shellcheck source=lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"

install_debian_packages() {
  local want=()
  if ! command -v kcat >/dev/null 2>&1 && ! command -v kafkacat >/dev/null 2>&1; then
    want+=(kcat)
  fi
  if ! command -v javac >/dev/null 2>&1; then
    want+=(openjdk-17-jdk-headless)
  fi
  if [ ! -f /usr/share/java/jackson-databind.jar ]; then
    want+=(libjackson2-databind-java)
  fi
  if ! command -v etcd >/dev/null 2>&1; then
    want+=(etcd-server)
  fi
  # The harness checks etcd's health and writes keys with etcdctl (tests/clients/etcd.py).
  if ! command -v etcdctl >/dev/null 2>&1; then
    want+=(etcd-client)
  fi
  # Headless Chromium and its WebDriver for the storage-console test (tests/clients/test_console.py).
  if ! command -v chromium >/dev/null 2>&1; then
    want+=(chromium)
  fi
  if ! command -v chromedriver >/dev/null 2>&1; then
    want+=(chromium-driver)
  fi
  # tests/clients/test_prometheus.py scrapes the broker with a real Prometheus server.
  if ! command -v prometheus >/dev/null 2>&1; then
    want+=(prometheus)
  fi
  # protoc: the build needs it too (scripts/lib/apt.sh names the packages).
  mapfile -t -O "${#want[@]}" want < <(missing_build_packages)
  if [ "${#want[@]}" -eq 0 ]; then
    return
  fi
  log "installing Debian packages: ${want[*]}"
  if ! apt_install "${want[@]}"; then
    # Older Debian releases only know librdkafka's CLI under its former name.
    want=("${want[@]/kcat/kafkacat}")
    apt_install "${want[@]}"
  fi
}

install_python_packages() {
  local stamp="$VENV/.strata-requirements"
  local wanted
  wanted=$(printf '%s\n' "${PY_REQUIREMENTS[@]}")
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return
  fi
  log "creating Python venv in ${VENV#"$ROOT"/}"
  mkdir -p "$DEPS"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_REQUIREMENTS[@]}"
  printf '%s\n' "$wanted" >"$stamp"
}

install_jars() {
  local stamp="$JARS/.strata-source"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$JAR_WHEEL" ]; then
    local missing=0 name
    for name in "${JAR_NAMES[@]}"; do
      [ -f "$JARS/$name" ] || missing=1
    done
    [ "$missing" -eq 0 ] && return
  fi
  log "fetching the Java Kafka client jars ($JAR_WHEEL)"
  local tmp
  tmp=$(mktemp -d)
  "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    -d "$tmp" "$JAR_WHEEL"
  mkdir -p "$JARS"
  "$VENV/bin/python" - "$tmp" "$JARS" "${JAR_NAMES[@]}" <<'PY'
import pathlib, sys, zipfile

tmp, dest, names = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
wheels = list(tmp.glob("*.whl"))
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {tmp}, found {wheels}")
with zipfile.ZipFile(wheels[0]) as wheel:
    for name in names:
        member = f"pyflink/lib/{name}"
        try:
            data = wheel.read(member)
        except KeyError:
            sys.exit(f"{member} is not in {wheels[0].name}")
        (dest / name).write_bytes(data)
PY
  rm -rf "$tmp"
  printf '%s\n' "$JAR_WHEEL" >"$stamp"
}

# Jackson for the Java client's OAUTHBEARER unsecured login module (tests/clients/test_security.py).
DEBIAN_JARS=(jackson-databind.jar jackson-core.jar jackson-annotations.jar)

link_debian_jars() {
  local name
  mkdir -p "$JARS"
  for name in "${DEBIAN_JARS[@]}"; do
    [ -e "$JARS/$name" ] || ln -s "/usr/share/java/$name" "$JARS/$name"
  done
}

install_rust_components() {
  local installed
  installed=$(rustup component list --installed 2>/dev/null || true)
  local want=()
  grep -q '^rustfmt' <<<"$installed" || want+=(rustfmt)
  grep -q '^clippy' <<<"$installed" || want+=(clippy)
  if [ "${#want[@]}" -gt 0 ]; then
    log "adding Rust components: ${want[*]}"
    rustup component add "${want[@]}"
  fi
}

install_debian_packages
install_python_packages
install_jars
link_debian_jars
install_rust_components
