#!/usr/bin/env bash
# The fast tier (`npm run test:fast`), for the loop of a change: lint, the native core,
# and the Node tests that need no browser, server of a real model, proxy or toolchain,
# against a dev build of the package. `npm test` (what CI runs) is the full run: fuzzing,
# both browsers, the toolchains, the real model, the proxy, and the packed package.
# It installs only the npm dev dependencies; the Rust toolchain and wasm-pack come from
# `npm test`'s setup (scripts/setup.sh). The last lines are node --test's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
[ -d node_modules/terser ] || npm install --no-audit --no-fund --loglevel=error

section() { printf '\n======== %s (at %d s) ========\n' "$*" "$SECONDS"; }

section "lint: cargo fmt, clippy"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings

section "native core: cargo test (profile fast-test: optimised, debug assertions on)"
# One test runs only in `npm test`: six hours of a pacer's life on virtual time, 8,000
# items each, with the engine's rules checked after every step (about 100 s here alone).
cargo test --profile fast-test --quiet -- --skip sporadic_429s_do_not_ratchet_the_rate_down

section "dev build of the package (scripts/build.sh --dev)"
bash scripts/build.sh --dev > /dev/null 2>&1 || bash scripts/build.sh --dev

# Test files that need a browser, a real model, the proxy, a toolchain, the demo, a
# packed tarball or minutes of simulation run only in `npm test`.
full_only=" ai-sdk-real-model bench-smoke demo-fallback demo-page demo-pages demo-pools
  demo-provider demo-shared-quota dispose-memory docs-examples e2e-chromium e2e-firefox
  indexeddb-cache init inline-wasm load-errors package-in-browser real-model recipes
  shared-proxy shared-quota soak-smoke streaming-in-browser "
files=()
for file in tests/node/*.test.mjs; do
  name="$(basename "$file" .test.mjs)"
  case "$full_only" in *[[:space:]]"$name"[[:space:]]*) ;; *) files+=("$file") ;; esac
done

section "Node tests against the dev build: ${#files[@]} files (npm test runs all, against the packed package)"
# The tests import "batch-pacer": from inside the repository that is the package itself
# (its package.json's exports: js/ and pkg/, just built).
BATCH_PACER_REPO="$PWD" node --test --test-concurrency=2 --test-reporter=spec "${files[@]}"
