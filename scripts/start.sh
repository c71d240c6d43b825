#!/usr/bin/env bash
# The main job: build the package into the demo extension, then translate the demo
# article and its subtitles in Chromium against the local mock provider (or a real one
# with OPENAI_BASE_URL, OPENAI_API_KEY and MODEL set) and print the report. On the mock,
# a third run spends the first model's daily quota halfway through the page and goes on
# with the fallback model, reporting how many paragraphs each provider served; last, five
# pacers (five tabs' page flows) share one strict quota, with and without the rules of a
# quota shared with other clients.
# SKIP_BUILD=1 reuses the current pkg/ (see scripts/build-demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
bash scripts/build-demo.sh
node extension-demo/run.mjs
