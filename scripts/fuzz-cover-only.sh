#!/usr/bin/env bash
# A RUSTC_WRAPPER for the fuzz build: coverage instrumentation only for the crates whose
# branches the fuzzers should steer by (ours and the parsers and decoders they call); every
# other crate (DataFusion, Arrow, tokio, …) is compiled without the sancov pass, still under
# the sanitizer, and still run by every input.
#
#   cd fuzz && RUSTC_WRAPPER=$PWD/../scripts/fuzz-cover-only.sh cargo +nightly fuzz build -O T
#
# Why: libFuzzer scans every coverage counter after every input. The full build has about
# 6 million (DataFusion and Arrow are most of them) and the scan was 42 % of `prometheus`'s
# time (perf, 2026-12-08), so the targets that link the query crate ran at 0.3–1 k inputs/s.
# FUZZ_COVER (an extended regex over crate names) replaces the list below.
set -euo pipefail
rustc=$1
shift
cover=${FUZZ_COVER:-'^(tempora_.*|promql_parser|lrpar|lrtable|cfgrammar|sqlparser|regex|regex_syntax|regex_automata|snap|prost|csv|csv_core|pgwire|datafusion_postgres)$'}
name=
prev=
for a in "$@"; do
  if [ "$prev" = "--crate-name" ]; then name=$a; fi
  prev=$a
done
if [ -z "$name" ] || [[ "$name" =~ $cover ]]; then
  exec "$rustc" "$@"
fi
args=()
skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then
    skip=0
    [ "$a" = "passes=sancov-module" ] && continue
    args+=("-C" "$a")
    continue
  fi
  case $a in
    -Cpasses=sancov-module) ;;
    -C) skip=1 ;;
    *) args+=("$a") ;;
  esac
done
exec "$rustc" "${args[@]}"
