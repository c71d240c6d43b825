#!/usr/bin/env bash
# Release build of the package: wasm (wasm-pack, wasm-opt from npm binaryen) + JS glue in pkg/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
[ -x node_modules/.bin/wasm-opt ] || npm install --no-audit --no-fund --loglevel=error
# Snippet folders are named by a hash: clear old ones so that none ships by mistake.
rm -rf pkg/snippets
wasm-pack build --release --target web --out-dir pkg --out-name batch_pacer --no-pack --no-typescript
# Without the glue's own default URL of the .wasm, bundlers see the .wasm once (see there).
node scripts/patch-glue.mjs
# The generated JS without its comments (the sources keep theirs; see there).
node scripts/strip-comments.mjs
# wasm-pack writes a .gitignore of "*" into pkg/, which would keep the files out of `npm pack`.
rm -f pkg/.gitignore
# The same module inline, for `batch-pacer/inline-wasm` (start-up without a fetch).
node scripts/inline-wasm.mjs
