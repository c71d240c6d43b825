#!/usr/bin/env bash
# Installs what the build and the tests need, skipping whatever is already there.
# Only package registries are reachable (crates.io, npm, Debian): every tool comes from one.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '== setup: %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null || ! command -v firefox-esr >/dev/null; then
  step "browsers (Debian chromium, chromium-driver, firefox-esr)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver firefox-esr >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# The release build rebuilds the standard library from its sources (scripts/release-wasm.toml).
# Without them it still builds, larger (scripts/build.sh says so).
if ! rustup component list --installed | grep -qx 'rust-src'; then
  step "rust component rust-src"
  rustup component add rust-src || echo "== setup: rust-src could not be installed; the .wasm will be built without scripts/release-wasm.toml" >&2
fi

if ! command -v wasm-pack >/dev/null; then
  step "wasm-pack"
  cargo install wasm-pack --locked
fi

# wasm-pack only uses a wasm-bindgen CLI whose version equals Cargo.lock's; otherwise it
# tries to download one, which fails here.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$bindgen_version" ]; then
  step "wasm-bindgen-cli $bindgen_version"
  # Without --locked: the registry lacks one of its locked dependencies.
  cargo install wasm-bindgen-cli --version "$bindgen_version" --force
fi

# The fuzz targets run briefly in `npm test` (scripts/fuzz.sh --check).
if ! cargo fuzz --version >/dev/null 2>&1; then
  step "cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

if ! command -v geckodriver >/dev/null; then
  step "geckodriver"
  cargo install geckodriver --locked
fi

if [ ! -x node_modules/.bin/wasm-opt ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "npm dev dependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi
