#!/usr/bin/env bash
# Installs quarry's dependencies and builds it. Safe to run again: it only reinstalls when the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# better-sqlite3 compiles from source when no prebuilt binary can be downloaded; node-gyp then needs Node's
# headers, which the Node install ships: point it at them instead of letting it download them.
if [ -z "${npm_config_nodedir:-}" ]; then
  prefix=$(node -p 'require("path").resolve(process.execPath, "..", "..")')
  if [ -f "$prefix/include/node/node.h" ]; then export npm_config_nodedir="$prefix"; fi
fi

stamp=node_modules/.quarry-setup
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund
  node -e "require('better-sqlite3')(':memory:').close()" # fail here, clearly, if the native module did not build
  touch "$stamp"
fi
npm run --silent build
