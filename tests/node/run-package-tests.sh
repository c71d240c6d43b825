#!/usr/bin/env bash
# Runs the Node test suite against the packed and installed package, never the sources.
#
#   bash tests/node/run-package-tests.sh            # build, pack, install, test
#   SKIP_BUILD=1 bash tests/node/run-package-tests.sh   # reuse the current pkg/
#
# Extra arguments are passed to `node --test` (e.g. --test-name-pattern=...).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

work="$(mktemp -d "${TMPDIR:-/tmp}/batch-pacer-tests.XXXXXX")"
cleanup() { [ "${KEEP_TEST_DIR:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

cd "$root"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "# building the package" >&2
  npm run build >&2
fi

# The build (when wanted) has just run, so the prepack hook is skipped.
echo "# packing" >&2
mkdir -p "$work/pack"
npm pack --ignore-scripts --silent --pack-destination "$work/pack" >&2
tarball="$(ls "$work"/pack/*.tgz)"

echo "# installing $(basename "$tarball") into a fresh project" >&2
mkdir -p "$work/project"
cd "$work/project"
cat > package.json <<'JSON'
{ "name": "batch-pacer-package-tests", "version": "0.0.0", "private": true, "type": "module" }
JSON
# The AI SDK (ai 7, and ai 6 under aliases) with its provider packages, at the versions the
# repository pins: the adapter's tests drive the real clients users call.
sdk=()
for name in ai @ai-sdk/openai-compatible @ai-sdk/anthropic @ai-sdk/google zod \
  ai-v6 ai-sdk-openai-compatible-v6 ai-sdk-anthropic-v6 ai-sdk-google-v6; do
  version="$(node -p "require('$root/package.json').devDependencies['$name']")"
  sdk+=("$name@$version")
done
npm install --no-audit --no-fund --prefer-offline --loglevel=error \
  "$tarball" "@sinonjs/fake-timers@15.5.0" "playwright-core@1.65.1" "selenium-webdriver@4.49.0" "${sdk[@]}" >&2

cp "$here"/*.mjs .
shopt -s nullglob
[ -d "$here/fixtures" ] && cp -r "$here/fixtures" .

# Tests of repository tools that are not part of the package (e.g. the demo's mock
# provider) find the repository through this variable.
export BATCH_PACER_REPO="$root"

echo "# running the tests in $work/project" >&2
set +e
node --test --test-reporter=spec "$@" ./*.test.mjs 2>&1 | tee "$work/output.txt"
status=${PIPESTATUS[0]}
set -e

# The spec reporter lists failing tests after its summary: repeat the summary last.
summary='^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) '
if ! tail -n 1 "$work/output.txt" | grep -Eq "$summary"; then
  echo
  grep -E "$summary" "$work/output.txt" | tail -n 8
fi
exit "$status"
