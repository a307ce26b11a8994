#!/usr/bin/env bash
# Builds every fuzz target (fuzz/, its own Cargo workspace) with libFuzzer's
# coverage instrumentation on the stable toolchain and runs each one briefly:
# STRATA_FUZZ_SECONDS per target (default 8). A crash, a panic or an abort
# (request_decode aborts on an allocation out of proportion to its input)
# fails the script, and libFuzzer leaves the input in target/fuzz/artifacts/.
# Long runs: docs/testing.md ("Fuzzing").
#
# The same flags `cargo fuzz` passes, minus -Zsanitizer (nightly only): the
# targets check their own invariants, and libFuzzer's RSS limit still applies.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_PER_TARGET=${STRATA_FUZZ_SECONDS:-8}
TARGET_DIR="$ROOT/target/fuzz"
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
TARGETS=(batch_validate recovery_tail request_decode consumer_offsets remote_log_metadata
  producer_snapshot checkpoint_files index_files transaction_log sasl_tokens http_request)

export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks"

# A smoke run only shows that every target builds and survives a few seconds, so it
# builds at opt-level 1 without debug info: about half the compile time of the fuzz
# crate's release profile, which is most of this step on a fresh machine. Long
# campaigns set STRATA_FUZZ_OPT_LEVEL=3 (and STRATA_FUZZ_DEBUG=1 for line numbers).
export CARGO_PROFILE_RELEASE_OPT_LEVEL=${STRATA_FUZZ_OPT_LEVEL:-1}
export CARGO_PROFILE_RELEASE_DEBUG=${STRATA_FUZZ_DEBUG:-0}

# --target keeps the instrumentation off build scripts and proc macros.
cargo build --manifest-path "$ROOT/fuzz/Cargo.toml" --release --target "$TRIPLE" \
  --target-dir "$TARGET_DIR" --bins

seed_requests() {
  local dir=$1
  # The 22-byte Metadata v4 request declaring 0x7fffffff topics (size prefix dropped).
  printf '\x00\x03\x00\x04\x00\x00\x00\x01\x00\x03adv\x7f\xff\xff\xff\x00' >"$dir/metadata-v4-huge"
  # ApiVersions v3 (flexible header and body).
  printf '\x00\x12\x00\x03\x00\x00\x00\x02\x00\x01c\x00\x02c\x021\x00' >"$dir/api-versions-v3"
  # Metadata v12 for one topic "t" (compact arrays, tagged fields).
  printf '\x00\x03\x00\x0c\x00\x00\x00\x03\x00\x01c\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02t\x00\x01\x00\x00' >"$dir/metadata-v12"
}

for t in "${TARGETS[@]}"; do
  work=$(mktemp -d)
  mkdir -p "$work/corpus" "$TARGET_DIR/artifacts/$t"
  if [ "$t" = request_decode ]; then
    seed_requests "$work/corpus"
  fi
  if [ "$t" = http_request ]; then
    printf 'GET /console/topics/t%%2Dx/0?x=1 HTTP/1.1\r\nHost: b\r\n\r\n' >"$work/corpus/console-get"
  fi
  printf 'fuzz-smoke: %s for %ss\n' "$t" "$SECONDS_PER_TARGET"
  if ! "$TARGET_DIR/$TRIPLE/release/$t" -max_total_time="$SECONDS_PER_TARGET" \
      -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$TARGET_DIR/artifacts/$t/" "$work/corpus" 2>"$work/log"; then
    tail -40 "$work/log"
    printf 'fuzz-smoke: %s FAILED (input saved under %s)\n' "$t" "$TARGET_DIR/artifacts/$t/"
    exit 1
  fi
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/log" | sed "s/^/fuzz-smoke: $t /" || true
  rm -rf "$work"
done
printf 'fuzz-smoke: %s targets passed\n' "${#TARGETS[@]}"
