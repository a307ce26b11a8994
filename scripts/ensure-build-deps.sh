#!/usr/bin/env bash
# Installs what building Strata needs beyond the Rust toolchain, only when missing:
# protoc (Debian's protobuf-compiler), which the etcd-client crate's build script runs.
# Fast when everything is there, so it can precede every build:
#   scripts/ensure-build-deps.sh && cargo run --release -p strata -- serve
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf 'ensure-build-deps: %s\n' "$*" >&2; }
# shellcheck source=lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"

mapfile -t want < <(missing_build_packages)
if [ "${#want[@]}" -gt 0 ]; then
  log "installing Debian packages: ${want[*]}"
  apt_install "${want[@]}"
fi
