#!/usr/bin/env bash
# Fuzzes the core with cargo fuzz (libFuzzer): the codec, option validation and the engine.
#
#   bash scripts/fuzz.sh [seconds-per-target]      # default 600 s per target
#   bash scripts/fuzz.sh --check [seconds]         # a short run per target (default 15 s),
#                                                  # as `npm test` does: the committed corpus
#                                                  # is read, never rewritten
#
# Targets run one after another (FUZZ_TARGETS="codec options engine replies" by default), each
# for the given time, starting from the committed corpus fuzz/corpus/<target>/. New
# inputs go to fuzz/corpus-raw/<target>/ (not committed); at the end the raw and committed
# corpora are merged (-merge=1) into a minimized set, of which at most FUZZ_CORPUS_CAP
# (300) files, spread over the sizes, replace fuzz/corpus/<target>/. Crashes are written to
# fuzz/artifacts/<target>/; reproduce one with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none <target> fuzz/artifacts/<target>/<file>
# (from fuzz/; FUZZ_TRACE=1 makes the engine target print every operation).
#
# Environment:
#   FUZZ_TARGETS      targets to run (default: codec options engine replies)
#   FUZZ_SKIP_KNOWN   comma-separated known issues to skip, `all` for every one:
#                     `fence-wrap` (codec: when the last paragraph ends with a code fence,
#                     a fence the model wraps around the whole reply is kept; the first
#                     and last items get its lines, the alignment is checked instead); by
#                     default every property is checked, so a known issue fails the run
#   FUZZ_SANITIZER    none (default: the core has no unsafe code) or address
#   FUZZ_CORPUS_CAP   most files kept per committed corpus (default 300)
#
# Only the stable toolchain is needed: RUSTC_BOOTSTRAP=1 lets it take cargo fuzz's
# nightly flags. Exits non-zero when a target crashed.
set -euo pipefail

# The whole script is one function, read in full before it runs.
main() {
  local check=0
  if [ "${1:-}" = "--check" ]; then
    check=1
    shift
  fi
  local seconds="${1:-$([ "$check" = 1 ] && echo 15 || echo 600)}"
  # The check in `npm test` runs the targets whose oracles hold in full; `replies` finds
  # replies that length evidence misreads (see its notes) and runs in long runs.
  local targets="${FUZZ_TARGETS:-$([ "$check" = 1 ] && echo codec options engine || echo codec options engine replies)}"
  local sanitizer="${FUZZ_SANITIZER:-none}"
  local cap="${FUZZ_CORPUS_CAP:-300}"
  local root fuzz
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  fuzz="$root/fuzz"
  export RUSTC_BOOTSTRAP=1

  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "# installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked >&2
  fi

  cd "$fuzz"
  echo "# building the fuzz targets (sanitizer: $sanitizer)" >&2
  cargo fuzz build --sanitizer "$sanitizer" >&2

  local logs="$fuzz/target/fuzz-logs"
  mkdir -p "$logs"
  local failed=() summary=()
  local target
  for target in $targets; do
    local raw="corpus-raw/$target" kept="corpus/$target" log="$logs/$target.log"
    if [ "$check" = 1 ]; then
      # New inputs go to a scratch folder: a check leaves the committed corpus as it is.
      raw="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-check-$target.XXXXXX")"
    fi
    mkdir -p "$raw" "$kept" "artifacts/$target"
    echo "# fuzzing $target for ${seconds}s (log: $log)" >&2
    local status=0
    cargo fuzz run --sanitizer "$sanitizer" "$target" "$raw" "$kept" -- \
      -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1 || status=$?
    local done_line execs coverage
    done_line="$(grep -E '^Done [0-9]+ runs in' "$log" | tail -n 1 || true)"
    execs="$(grep -E '^stat::number_of_executed_units' "$log" | tail -n 1 | awk '{print $2}' || true)"
    coverage="$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)"
    if [ "$status" -ne 0 ]; then
      failed+=("$target")
      echo "## $target: CRASHED (exit $status) after ${execs:-?} executions" >&2
      grep -E -m 3 -A 3 "panicked at|ERROR: libFuzzer|SUMMARY" "$log" >&2 || true
      grep -E "Test unit written to" "$log" >&2 || true
      summary+=("$target: crashed after ${execs:-?} executions (see $log)")
    else
      echo "## $target: $done_line" >&2
      summary+=("$target: ${done_line:-no final line} (${execs:-?} executions, ${coverage:-?})")
    fi
    if [ "$check" = 1 ]; then
      rm -rf "$raw"
    else
      keep_corpus "$target" "$raw" "$kept" "$cap" "$sanitizer" "$logs"
    fi
  done

  echo
  echo "fuzz summary (${seconds}s per target):"
  local line
  for line in "${summary[@]}"; do
    echo "  $line"
  done
  if [ "${#failed[@]}" -ne 0 ]; then
    echo "crashed: ${failed[*]}"
    return 1
  fi
}

# Merges the raw and kept corpora into a minimized set and keeps at most `cap` files of
# it, spread over the sizes (the smallest alone would drop the long engine scripts).
keep_corpus() {
  local target="$1" raw="$2" kept="$3" cap="$4" sanitizer="$5" logs="$6"
  local merged
  merged="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-merge-$target.XXXXXX")"
  cargo fuzz run --sanitizer "$sanitizer" "$target" "$merged" "$kept" "$raw" -- \
    -merge=1 -max_len=4096 >"$logs/$target.merge.log" 2>&1 || true
  local files=()
  # shellcheck disable=SC2012
  mapfile -t files < <(ls -S -r "$merged")
  if [ "${#files[@]}" -gt 0 ]; then
    rm -rf "$kept"
    mkdir -p "$kept"
    local n="${#files[@]}" i
    local take=$((n < cap ? n : cap))
    for ((i = 0; i < take; i++)); do
      cp "$merged/${files[$((i * n / take))]}" "$kept/"
    done
  fi
  rm -rf "$merged"
  echo "## $target: corpus kept: $(ls "$kept" | wc -l) files, $(du -sh --apparent-size "$kept" | cut -f1)" >&2
}

main "$@"
