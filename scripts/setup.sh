#!/usr/bin/env bash
# Installs quarry's dependencies and builds it. Safe to run again: it only reinstalls when the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/node-headers.sh # Node's headers for native builds, from the Node install

stamp=node_modules/.quarry-setup
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund
  node -e "require('better-sqlite3')(':memory:').close()" # fail here, clearly, if the native module did not build
  touch "$stamp"
fi
npm run --silent build
