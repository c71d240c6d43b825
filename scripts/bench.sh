#!/usr/bin/env bash
# The benchmarks (`npm run bench`): builds the package when pkg/ is missing or older than
# the Rust sources, runs the core benchmark (`cargo bench --bench engine`), packs the
# package and installs the tarball into a temporary project, then runs bench/run.mjs on
# that installed copy: one table per workload, written with the machine's details to
# bench/results.md, and the quota chart to bench/quota.svg.
#
#   npm run bench                   # everything
#   npm run bench -- --no-chromium  # extra arguments go to bench/run.mjs
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bash scripts/setup.sh
export PATH="$root/node_modules/.bin:$HOME/.cargo/bin:$PATH"

section() { printf '\n======== %s ========\n' "$*"; }

# The package is rebuilt when its sources or the build's own scripts are newer than it.
stale() {
  [ -f pkg/batch_pacer_bg.wasm ] && [ -f pkg/batch_pacer.js ] || return 0
  [ -n "$(find src Cargo.toml Cargo.lock .cargo scripts/build.sh scripts/release-wasm.toml scripts/*.mjs -newer pkg/batch_pacer_bg.wasm -print -quit)" ]
}
if stale; then
  section "building the package"
  bash scripts/build.sh
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/batch-pacer-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

section "core engine: cargo bench --bench engine"
cargo bench --quiet --bench engine 2>&1 | tee "$work/engine.txt"

section "packing and installing the package"
mkdir -p "$work/pack" "$work/project"
# The build (when needed) has just run, so the prepack hook is skipped.
npm pack --ignore-scripts --silent --pack-destination "$work/pack" >/dev/null
(
  cd "$work/project"
  echo '{ "name": "batch-pacer-bench", "version": "0.0.0", "private": true, "type": "module" }' > package.json
  npm install --no-audit --no-fund --loglevel=error "$work"/pack/*.tgz >/dev/null
)

# Workload 11 ("Models that cannot batch", bench/workload-cannot-batch.mjs) drives
# llama.cpp's llama-server with SmolLM2-135M-Instruct: scripts/llama-setup.sh builds and
# fetches them once (the first run about 15-20 minutes on two cores, cached under
# ~/.cache/batch-pacer/llama, later runs nothing) and prints `LLAMA_SERVER=...
# LLAMA_MODEL=...` as its last line.
section "real model: llama-server and SmolLM2-135M-Instruct (scripts/llama-setup.sh)"
source scripts/llama-env.sh

section "package benchmarks: node bench/run.mjs"
BENCH_COMMAND="npm run bench${*:+ -- $*}" node --expose-gc bench/run.mjs \
  --package "$work/project/node_modules/batch-pacer" --engine-output "$work/engine.txt" "$@"
