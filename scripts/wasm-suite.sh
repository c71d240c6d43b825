#!/usr/bin/env bash
# Runs one wasm-bindgen-test suite (the command given as arguments). Now and then a
# browser's service worker never starts the suite: "threw an exception during script
# evaluation" before any test ran (Firefox ESR, about one run in six). That failure, and
# only that one, is run again, up to twice, saying so; any other failure (a test that
# failed, however racy) fails at once. Give it one suite per call: a passing suite's
# "test … ok" lines in the same log would hide that the failing one never started.
set -uo pipefail

STARTUP_FAILURE="threw an exception during script evaluation"
ATTEMPTS=3

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

for attempt in $(seq 1 "$ATTEMPTS"); do
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  [ "$status" -eq 0 ] && exit 0
  # A suite that started reports each test as "test <name> ... ok|FAILED|ignored".
  if ! grep -q "$STARTUP_FAILURE" "$log" || grep -Eq '^test .+ \.\.\. ' "$log"; then
    exit "$status"
  fi
  [ "$attempt" -lt "$ATTEMPTS" ] &&
    echo "# the wasm suite did not start ($STARTUP_FAILURE); run $((attempt + 1)) of $ATTEMPTS: $*" >&2
done
exit "$status"
