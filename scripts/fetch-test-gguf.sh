#!/usr/bin/env bash
# Provisions the in-process GGUF test: node-llama-cpp with its prebuilt CPU binary for this platform (into a folder of
# its own, so quarry's install stays lean: the GPU variants npm would fetch are ~350 MB), and a tiny llama model
# written by PyPI's `gguf` package (llama.cpp's GGUF writer; see scripts/make-test-gguf.py), checked by sha256.
# Prints nothing to do when both are there.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${XDG_CACHE_HOME:-$HOME/.cache}/quarry"
runtime="$cache/gguf-runtime"
model="$cache/test-models/tiny-llama.gguf"
sha=8d4c35910436f35c835109eab80ea11b444485fafe0c3f0c9fea3cfcfbb05532
version=3.22.1

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  Darwin-arm64) platform=mac-arm64-metal ;;
  Darwin-x86_64) platform=mac-x64 ;;
  *) echo "test gguf: no prebuilt node-llama-cpp for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

if [ ! -f "$runtime/node_modules/node-llama-cpp/package.json" ]; then
  mkdir -p "$runtime"
  echo '{"name":"quarry-gguf-runtime","private":true}' > "$runtime/package.json"
  # --ignore-scripts: its postinstall would try to build llama.cpp; the prebuilt binary is enough
  npm install --prefix "$runtime" --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error \
    "node-llama-cpp@$version" "@node-llama-cpp/$platform@$version" >/dev/null
fi

if [ -f "$model" ] && [ "$(sha256sum "$model" | cut -d' ' -f1)" = "$sha" ]; then
  echo "test gguf: ready ($model)"
  exit 0
fi
venv="$cache/test-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "gguf==0.19.0"
mkdir -p "$(dirname "$model")"
"$venv/bin/python" scripts/make-test-gguf.py "$model.tmp"
got=$(sha256sum "$model.tmp" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  rm -f "$model.tmp"
  echo "test gguf: sha256 mismatch ($got, expected $sha): the gguf or numpy package changed its output" >&2
  exit 1
fi
mv "$model.tmp" "$model"
echo "test gguf: ready ($model)"
