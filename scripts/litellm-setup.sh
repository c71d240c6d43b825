#!/usr/bin/env bash
# Installs LiteLLM's proxy (PyPI `litellm[proxy]`, at the version below, every dependency
# pinned by scripts/litellm-constraints.txt) into a virtual environment for the shared-proxy
# test (tests/node/shared-proxy.test.mjs) and the recipe docs/recipes/shared-proxy.md.
# Cached under ~/.cache/batch-pacer/litellm and skipped when that version is already there:
# the first install takes about 70 s (about 750 MB), later runs nothing.
# Prints, as its last line, `LITELLM=<path of the litellm command>`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="1.106.12"
cache="${BATCH_PACER_CACHE:-$HOME/.cache/batch-pacer}/litellm"
venv="$cache/venv"
bin="$venv/bin/litellm"
mkdir -p "$cache"

# The marker holds the version and the constraints it was installed with: a change of
# either installs again, from an empty environment.
wanted="$version $(sha256sum "$here/litellm-constraints.txt" | cut -c1-16)"
if [ ! -x "$bin" ] || [ "$(cat "$cache/installed" 2>/dev/null)" != "$wanted" ]; then
  printf '== litellm-setup: litellm[proxy]==%s (PyPI, about 70 s)\n' "$version" >&2
  rm -rf "$venv" "$cache/installed"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    -c "$here/litellm-constraints.txt" "litellm[proxy]==$version" >&2
  echo "$wanted" > "$cache/installed"
fi
echo "LITELLM=$bin"
