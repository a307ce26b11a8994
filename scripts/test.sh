#!/usr/bin/env bash
# The one test command for Strata (README; CI runs exactly this via .ci/run):
#   1. install test dependencies (scripts/install-test-deps.sh; fast when already there)
#   2. cargo fmt --check, then no import loop between the top-level modules of the
#      engine, tiered and broker crates (scripts/check-import-loops.py)
#   3. cargo clippy on every target, warnings denied (release profile, shared with step 4)
#   4. one optimized build of the workspace with debug assertions and overflow checks on,
#      shared by the Rust tests and the broker binary the client tests start
#   5. cargo test on the workspace (the fuzz crate and bench/rawfetch are separate workspaces)
#   6. the real-client suite: pytest tests/clients against target/release/strata
#   7. every fuzz target built and run briefly (scripts/fuzz-smoke.sh), beside step 6 at the
#      lowest CPU and I/O priority
# Exits non-zero on the first failing step and always prints a one-line summary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
# Release speed for the client tests, but keep the checks a debug build would make.
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
# Line tables are all a failing test's backtrace needs; full debug info only makes
# every object and link of the gate's build larger and slower.
export CARGO_PROFILE_RELEASE_DEBUG=${CARGO_PROFILE_RELEASE_DEBUG:-line-tables-only}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

START=$SECONDS
CURRENT=""
TIMINGS=()

summary() {
  local code=$?
  # A failed step must not leave the background fuzz run behind.
  if [ -n "${FUZZ_PID:-}" ]; then
    kill -- "-$FUZZ_PID" 2>/dev/null || true
  fi
  local total=$((SECONDS - START))
  if [ "$code" -eq 0 ]; then
    printf '\ntest.sh: PASS in %ds (%s)\n' "$total" "${TIMINGS[*]}"
  else
    printf '\ntest.sh: FAIL at step "%s" (exit %d) after %ds (%s)\n' "$CURRENT" "$code" "$total" "${TIMINGS[*]:-}"
  fi
}
trap summary EXIT

step() {
  local name=$1
  shift
  CURRENT=$name
  printf '\n==> %s: %s\n' "$name" "$*"
  local t0=$SECONDS
  "$@"
  TIMINGS+=("$name $((SECONDS - t0))s")
}

step deps scripts/install-test-deps.sh
step fmt cargo fmt --all -- --check
step import-loops python3 scripts/check-import-loops.py crates/strata-log crates/strata-tiered \
  crates/strata-broker crates/strata-security
# Clippy in the release profile: its build scripts and proc macros (aws-lc's and zstd's C
# builds among them) are then the same artifacts the build step uses, not a second debug set.
step clippy cargo clippy --workspace --all-targets --release -- -D warnings
step build cargo build --workspace --release --bins
step rust-tests cargo test --workspace --release
# The fuzz smoke (its own instrumented build, CPU-bound) runs beside the client tests (mostly
# waiting on brokers, etcd and clients) at the lowest CPU and I/O priority, so the processes under
# test keep theirs; on CI's two cores this saves most of the fuzz build's minutes.
FUZZ_LOG=$(mktemp)
printf '\n==> fuzz (beside client-tests, lowest priority): scripts/fuzz-smoke.sh\n'
FUZZ_T0=$SECONDS
setsid nice -n 19 ionice -c 3 scripts/fuzz-smoke.sh >"$FUZZ_LOG" 2>&1 &
FUZZ_PID=$!
step client-tests env STRATA_BIN="$TARGET_DIR/release/strata" \
  .test-deps/venv/bin/python -m pytest tests/clients -q --durations=15
CURRENT=fuzz
printf '\n==> fuzz: waiting for the background run\n'
FUZZ_RC=0
wait "$FUZZ_PID" || FUZZ_RC=$?
FUZZ_PID=""
cat "$FUZZ_LOG"
rm -f "$FUZZ_LOG"
TIMINGS+=("fuzz $((SECONDS - FUZZ_T0))s (beside client-tests)")
[ "$FUZZ_RC" -eq 0 ] || exit "$FUZZ_RC"
CURRENT=done
