#!/usr/bin/env bash
# Every test: lint, the native core, the wasm binding in Chromium and Firefox (page and
# service worker), then the packed and installed package in Node and in real browsers,
# built by each extension toolchain (tests/toolchains), and the demo extension end to end
# in Chromium and Firefox ESR.
# Installs what it needs first (scripts/setup.sh). The last lines are node --test's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# Setup installed every browser, driver and runtime: a test or toolchain case that finds
# one missing fails instead of skipping (tests/node/requirements.mjs, tests/toolchains).
export BATCH_PACER_REQUIRE_ALL=1

section() { printf '\n======== %s ========\n' "$*"; }

section "lint: cargo fmt, clippy (native and wasm32)"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy --all-targets --quiet --target wasm32-unknown-unknown -- -D warnings

section "native core: cargo test"
cargo test

# Each fuzz target briefly, from its committed corpus: an oracle that no longer follows the
# contract fails here. `fence-wrap` is the separator layout's documented limit (docs/guides/proof.md).
section "fuzz targets: a short run each (scripts/fuzz.sh --check)"
FUZZ_SKIP_KNOWN="${FUZZ_SKIP_KNOWN:-fence-wrap}" bash scripts/fuzz.sh --check 15

# Each suite is a ~20 MB debug module that the browser fetches and compiles before the
# first test; on a busy two-CPU machine that alone can pass the runner's default 20 s.
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
# Each suite runs on its own, so that one whose service worker never started can be run
# again alone (scripts/wasm-suite.sh) without the page suite's passing lines in its log.
wasm_suite() { bash scripts/wasm-suite.sh "$@"; }
for suite in wasm_browser wasm_service_worker; do
  section "wasm binding in Chromium: $suite"
  wasm_suite wasm-pack test --headless --chrome --chromedriver "$(command -v chromedriver)" -- --test "$suite"
  section "wasm binding in Firefox ESR: $suite"
  wasm_suite wasm-pack test --headless --firefox --geckodriver "$(command -v geckodriver)" -- --test "$suite"
done

section "the demo extension, built from the packed package"
bash scripts/build-demo.sh

# Each toolchain's consumer project is cached in ~/.cache/batch-pacer/toolchains while its
# pinned versions hold: a warm run takes about a minute, a clean machine a few more.
section "toolchain matrix: the packed package built by WXT, Vite, webpack, esbuild, Rollup, Bun; run in Chromium, Firefox ESR, Node, Deno, Bun"
node tests/toolchains/run.mjs

# The real-model tests (tests/node/real-model.test.mjs) drive llama.cpp's llama-server with
# SmolLM2-135M-Instruct: scripts/llama-setup.sh builds and fetches them once (the first run
# about 15-20 minutes on two cores, cached under ~/.cache/batch-pacer/llama, later runs
# nothing) and prints `LLAMA_SERVER=... LLAMA_MODEL=...` as its last line.
section "real model: llama-server and SmolLM2-135M-Instruct (scripts/llama-setup.sh)"
source scripts/llama-env.sh

# The shared-proxy test (tests/node/shared-proxy.test.mjs) runs LiteLLM's proxy:
# scripts/litellm-setup.sh installs it once (about 70 s, cached under
# ~/.cache/batch-pacer/litellm, later runs nothing) and prints `LITELLM=...` as its last line.
section "shared proxy: LiteLLM (scripts/litellm-setup.sh)"
litellm="$(bash scripts/litellm-setup.sh | tail -n 1)"
case "$litellm" in
  LITELLM=*) export LITELLM="${litellm#LITELLM=}" ;;
  *) echo "scripts/litellm-setup.sh did not end with LITELLM=... (got: $litellm)" >&2; exit 1 ;;
esac

section "packed package in Node and in browsers, demo end to end: node --test"
SKIP_BUILD=1 bash tests/node/run-package-tests.sh
