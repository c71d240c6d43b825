#!/usr/bin/env bash
# Runs a wasm-bindgen-test suite (the command given as arguments). Now and then a
# browser's service worker never starts the suite: "threw an exception during script
# evaluation" before any test ran (seen once in Firefox ESR in six runs). That failure,
# and only that one, is run once more, saying so; any other failure (a test that failed,
# however racy) fails at once.
set -uo pipefail

STARTUP_FAILURE="threw an exception during script evaluation"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

"$@" 2>&1 | tee "$log"
status=$?
[ "$status" -eq 0 ] && exit 0

# A suite that started reports each test as "test <name> ... ok|FAILED|ignored".
if grep -q "$STARTUP_FAILURE" "$log" && ! grep -Eq '^test .+ \.\.\. ' "$log"; then
  echo "# the wasm suite did not start ($STARTUP_FAILURE); running it once more: $*" >&2
  exec "$@"
fi
exit "$status"
