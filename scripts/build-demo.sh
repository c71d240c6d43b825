#!/usr/bin/env bash
# Builds the package, packs it, and unpacks the tarball into extension-demo/vendor/, so
# the extension loads exactly what npm users install. SKIP_BUILD=1 packs the current pkg/
# without building it again (when pkg/ is known to be up to date with src/).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/build.sh
fi
pack_dir="$(mktemp -d)"
trap 'rm -rf "$pack_dir"' EXIT
npm pack --ignore-scripts --silent --pack-destination "$pack_dir" >/dev/null
rm -rf extension-demo/vendor/batch-pacer
mkdir -p extension-demo/vendor/batch-pacer
tar -xzf "$pack_dir"/*.tgz -C extension-demo/vendor/batch-pacer --strip-components=1
echo "extension-demo/vendor/batch-pacer: $(cd extension-demo/vendor/batch-pacer && find . -type f | wc -l) files from $(basename "$pack_dir"/*.tgz)"
