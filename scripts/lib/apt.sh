# Debian package helpers shared by scripts/install-test-deps.sh and
# scripts/ensure-build-deps.sh. Sourced, not run: the caller sets `set -euo pipefail`
# and defines `log MESSAGE...`.

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    log "need root for: $*"
    return 1
  fi
}

apt_lists_present() {
  compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null
}

# Installs Debian packages, running `apt-get update` only when the package lists are
# missing or the first attempt fails (stale lists).
apt_install() {
  if ! apt_lists_present; then
    log "apt-get update (no package lists yet)"
    as_root apt-get update -qq
  fi
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; then
    log "apt-get install failed; refreshing package lists and retrying"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  fi
}

# The Debian packages the build needs beyond the Rust toolchain, one a line, when their
# command is missing: protoc (protobuf-compiler) compiles etcd's gRPC definitions in the
# etcd-client crate's build script.
missing_build_packages() {
  command -v protoc >/dev/null 2>&1 || echo protobuf-compiler
}
