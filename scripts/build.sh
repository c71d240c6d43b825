#!/usr/bin/env bash
# Release build of the package (`--dev`: a dev build, see below): wasm (wasm-pack, wasm-opt from npm binaryen) + JS glue in
# pkg/, and the package's own JS, minified from src/js/, in js/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
{ [ -x node_modules/.bin/wasm-opt ] && [ -d node_modules/terser ]; } || npm install --no-audit --no-fund --loglevel=error
# Snippet folders are named by a hash: clear old ones so that none ships by mistake.
rm -rf pkg/snippets
# The standard library rebuilt for size, with unstable settings (see there). It needs the
# standard library's sources: without them the package still builds, ~10 KB larger gzipped.
release_config=(--config scripts/release-wasm.toml)
if ! rustup component list --installed 2>/dev/null | grep -qx rust-src; then
  echo "warning: the rust-src component is missing (scripts/setup.sh installs it): building without scripts/release-wasm.toml, the .wasm ~10 KB larger gzipped" >&2
  release_config=()
fi
# `--dev` (npm run test:fast): an unoptimised module with debug assertions, built in
# seconds after a change, not shipped; every later step is the same.
if [ "${1:-}" = --dev ]; then
  wasm-pack build --dev --target web --out-dir pkg --out-name batch_pacer --no-pack --no-typescript .
else
  RUSTC_BOOTSTRAP=1 wasm-pack build --release --target web --out-dir pkg --out-name batch_pacer \
    --no-pack --no-typescript . -- "${release_config[@]}"
fi
# Without the glue's own default URL of the .wasm, bundlers see the .wasm once (see there).
node scripts/patch-glue.mjs
# Short import and export names in the .wasm and the glue (see there).
node scripts/short-names.mjs
# The JS the package ships, minified: src/js/ into js/, and the glue in place (see there).
node scripts/ship-js.mjs
# wasm-pack writes a .gitignore of "*" into pkg/, which would keep the files out of `npm pack`.
rm -f pkg/.gitignore
# The same module inline, for `batch-pacer/inline-wasm` (start-up without a fetch).
node scripts/inline-wasm.mjs
