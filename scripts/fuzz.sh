#!/usr/bin/env bash
# Fuzzes the core with cargo fuzz (libFuzzer): the codec, option validation and the engine.
#
#   bash scripts/fuzz.sh [seconds-per-target]      # default 600 s per target
#
# Targets run one after another (FUZZ_TARGETS="codec options engine" by default), each
# for the given time, starting from the committed corpus fuzz/corpus/<target>/. New
# inputs go to fuzz/corpus-raw/<target>/ (not committed); at the end the raw and committed
# corpora are merged (-merge=1) into a minimized set, of which at most FUZZ_CORPUS_CAP
# (300) of the smallest files replace fuzz/corpus/<target>/. Crashes are written to
# fuzz/artifacts/<target>/; reproduce one with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none <target> fuzz/artifacts/<target>/<file>
# (from fuzz/; FUZZ_TRACE=1 makes the engine target print every operation).
#
# Environment:
#   FUZZ_TARGETS      targets to run (default: codec options engine)
#   FUZZ_SKIP_KNOWN   comma-separated known issues to skip (see fuzz/fuzz_targets/*.rs,
#                     `all` for every one); by default every property is checked
#   FUZZ_SANITIZER    none (default: the core has no unsafe code) or address
#   FUZZ_CORPUS_CAP   most files kept per committed corpus (default 300)
#
# Only the stable toolchain is needed: RUSTC_BOOTSTRAP=1 lets it take cargo fuzz's
# nightly flags. Exits non-zero when a target crashed.
set -euo pipefail

seconds="${1:-600}"
targets="${FUZZ_TARGETS:-codec options engine}"
sanitizer="${FUZZ_SANITIZER:-none}"
cap="${FUZZ_CORPUS_CAP:-300}"
root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz="$root/fuzz"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "# installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked >&2
fi

cd "$fuzz"
echo "# building the fuzz targets (sanitizer: $sanitizer)" >&2
cargo fuzz build --sanitizer "$sanitizer" >&2

logs="$fuzz/target/fuzz-logs"
mkdir -p "$logs"
failed=()
summary=()
for target in $targets; do
  raw="corpus-raw/$target"
  kept="corpus/$target"
  mkdir -p "$raw" "$kept" "artifacts/$target"
  log="$logs/$target.log"
  echo "# fuzzing $target for ${seconds}s (log: $log)" >&2
  set +e
  cargo fuzz run --sanitizer "$sanitizer" "$target" "$raw" "$kept" -- \
    -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$log" 2>&1
  status=$?
  set -e
  done_line="$(grep -E '^Done [0-9]+ runs in' "$log" | tail -n 1 || true)"
  execs="$(grep -E '^stat::number_of_executed_units' "$log" | tail -n 1 | awk '{print $2}' || true)"
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    echo "## $target: CRASHED (exit $status) after ${execs:-?} executions" >&2
    grep -E -m 3 -A 3 "panicked at|ERROR: libFuzzer|SUMMARY" "$log" >&2 || true
    grep -E "Test unit written to" "$log" >&2 || true
    summary+=("$target: crashed after ${execs:-?} executions (see $log)")
  else
    echo "## $target: $done_line" >&2
    summary+=("$target: ${done_line:-no final line} (${execs:-?} executions)")
  fi

  # Keep a small committed corpus: merge, then the smallest files up to the cap.
  merged="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-merge-$target.XXXXXX")"
  cargo fuzz run --sanitizer "$sanitizer" "$target" "$merged" "$kept" "$raw" -- \
    -merge=1 -max_len=4096 >"$logs/$target.merge.log" 2>&1 || true
  if [ -n "$(ls -A "$merged")" ]; then
    rm -rf "$kept"
    mkdir -p "$kept"
    # shellcheck disable=SC2012
    mapfile -t files < <(ls -S -r "$merged")
    for file in "${files[@]:0:$cap}"; do
      cp "$merged/$file" "$kept/"
    done
  fi
  rm -rf "$merged"
  echo "## $target: corpus kept: $(ls "$kept" | wc -l) files, $(du -sh --apparent-size "$kept" | cut -f1)" >&2
done

echo
echo "fuzz summary (${seconds}s per target):"
for line in "${summary[@]}"; do
  echo "  $line"
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "crashed: ${failed[*]}"
  exit 1
fi
