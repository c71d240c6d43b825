#!/usr/bin/env bash
# Every test: lint, the native core, the wasm binding in Chromium and Firefox (page and
# service worker), then the packed and installed package in Node (and in a real page).
# Installs what it needs first (scripts/setup.sh). The last lines are node --test's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

section() { printf '\n======== %s ========\n' "$*"; }

section "lint: cargo fmt, clippy (native and wasm32)"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy --all-targets --quiet --target wasm32-unknown-unknown -- -D warnings

section "native core: cargo test"
cargo test

wasm_tests=(--test wasm_browser --test wasm_service_worker)
section "wasm binding in Chromium (page + service worker)"
wasm-pack test --headless --chrome --chromedriver "$(command -v chromedriver)" -- "${wasm_tests[@]}"
section "wasm binding in Firefox ESR (page + service worker)"
wasm-pack test --headless --firefox --geckodriver "$(command -v geckodriver)" -- "${wasm_tests[@]}"

section "packed package in Node and in a page: node --test"
bash tests/node/run-package-tests.sh
