#!/usr/bin/env bash
# Installs quarry as a user does and runs its main job: `npm pack`, then `npm install -g --prefix EMPTY` of the
# tarball with no install flags (only the npm registry reachable), the weights installed from a local file with
# `quarry model install`, then index with embeddings and a hybrid search that must find the code by meaning.
# Run by scripts/test.sh (so by .ci/run); about two minutes, most of it better-sqlite3 compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

. scripts/node-headers.sh # Node's headers for native builds, from the Node install

weights="${XDG_CACHE_HOME:-$HOME/.cache}/quarry/models/all-MiniLM-L6-v2/model.onnx"
[ -f "$weights" ] || { echo "test-install: run scripts/fetch-test-weights.sh first" >&2; exit 1; }

tmp=$(mktemp -d)
serve=
# a check that fails while `quarry serve` runs (below) leaves nothing running
trap '[ -z "$serve" ] || kill "$serve" 2>/dev/null; rm -rf "$tmp"' EXIT
npm run --silent build
npm pack --silent --pack-destination "$tmp" >/dev/null
tarball=$(ls "$tmp"/quarry-*.tgz)
echo "test-install: installing $(basename "$tarball") into an empty prefix"
mkdir -p "$tmp/prefix" "$tmp/home"
# A user's machine: an empty prefix, an empty home (no quarry cache, no user config), no install flags.
env -u ONNXRUNTIME_NODE_INSTALL -u npm_config_onnxruntime_node_install \
  npm install -g --prefix "$tmp/prefix" --no-audit --no-fund "$tarball" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log" >&2
  echo "test-install: npm install -g of the packed tarball failed" >&2
  exit 1
}
# nothing of quarry's making in npm's warnings (it set npm_config_nodedir, which npm 11 warns about)
if grep -q 'Unknown env config' "$tmp/install.log"; then
  grep 'Unknown env config' "$tmp/install.log" >&2
  echo "test-install: the install printed npm config warnings" >&2
  exit 1
fi
quarry="$tmp/prefix/bin/quarry"
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/home/.cache" XDG_CONFIG_HOME="$tmp/home/.config"
unset QUARRY_MODEL QUARRY_SHARED_CACHE

"$quarry" --version
"$quarry" model install "$weights"

# a small project: quarry's own search code
proj="$tmp/project"
mkdir -p "$proj"
cp -r "$root/src/search" "$root/src/context" "$proj/"
(cd "$proj" && git init -q)
(cd "$proj" && "$quarry" index --json >"$tmp/index.json")
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  if (!(r.stats.files > 3)) throw new Error("test-install: too few files indexed: " + JSON.stringify(r.stats));
  if (!(r.embedding && r.embedding.embedded > 0)) throw new Error("test-install: no vectors embedded: " + JSON.stringify(r.embedding));
' "$tmp/index.json"
(cd "$proj" && "$quarry" search --mode hybrid --json "combine several ranked result lists into one" >"$tmp/search.json")
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const top = r.results.slice(0, 5).map((h) => h.path);
  if (r.mode !== "hybrid") throw new Error("test-install: search ran as " + r.mode + ", not hybrid");
  if (!top.some((p) => p.endsWith("search/search.ts"))) throw new Error("test-install: search.ts not in the top 5: " + top.join(", "));
  console.log("test-install: hybrid search answered from the installed package; top: " + top[0]);
' "$tmp/search.json"
(cd "$proj" && "$quarry" doctor)

# The settings schema (zod) loads only where a settings file is read (scripts/bundle.mjs): a search without one never
# requires its CommonJS build; with one, the setting applies and a bad value is one line naming it, exit code 2.
cat >"$tmp/probe.cjs" <<'EOF'
process.on('exit', () => {
  if (Object.keys(require('node:module')._cache).some((f) => f.endsWith('settings.cjs')))
    process.stderr.write('probe: settings.cjs loaded\n');
});
EOF
probe() { (cd "$proj" && NODE_OPTIONS="--require \"$tmp/probe.cjs\"" "$quarry" search --json "ranked result lists" 2>"$tmp/probe.err"); }
probe >"$tmp/plain.json"
if grep -q 'settings.cjs loaded' "$tmp/probe.err"; then
  echo "test-install: a search with no settings file loaded the settings schema" >&2
  exit 1
fi
printf '[search]\ntop_k = 2\n' >"$proj/quarry.toml"
probe >"$tmp/set.json"
grep -q 'settings.cjs loaded' "$tmp/probe.err" || { echo "test-install: quarry.toml was read without the schema" >&2; exit 1; }
node -e '
  const n = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).results.length;
  if (n !== 2) throw new Error("test-install: top_k = 2 in quarry.toml gave " + n + " results");
' "$tmp/set.json"
printf '[search]\ntop_k = "two"\n' >"$proj/quarry.toml"
set +e
(cd "$proj" && "$quarry" search "ranked result lists" >/dev/null 2>"$tmp/bad.err")
code=$?
set -e
# quarry's own error (the schema's build shares the bundle's QuarryError), not a parse failure wrapped around another
if [ "$code" != 2 ] || [ "$(wc -l <"$tmp/bad.err" | tr -d ' ')" != 1 ] || ! grep -q 'search.top_k must be' "$tmp/bad.err" ||
  grep -q 'cannot parse' "$tmp/bad.err"; then
  echo "test-install: a bad setting gave exit code $code and:" >&2
  cat "$tmp/bad.err" >&2
  exit 1
fi
rm "$proj/quarry.toml"
echo "test-install: settings read on demand (top_k applied, a bad value refused in one line)"

# A search in a checkout that a running `quarry serve` keeps open asks it (.quarry/server.json), loading only what
# asks and prints (cli/main.ts's command table): the same answer, and no SQLite, regular-expression engine or model.
cat >"$tmp/native.cjs" <<'EOF'
process.on('exit', () => {
  for (const name of ['better-sqlite3', 're2', 'onnxruntime-node'])
    if (Object.keys(require('node:module')._cache).some((f) => f.includes(`/node_modules/${name}/`)))
      process.stderr.write(`probe: ${name} loaded\n`);
});
EOF
(cd "$proj" && exec "$quarry" serve --no-watch --port 0 >"$tmp/serve.out" 2>&1) &
serve=$!
for _ in $(seq 1 120); do [ -f "$proj/.quarry/server.json" ] && break; sleep 0.5; done
[ -f "$proj/.quarry/server.json" ] || { cat "$tmp/serve.out" >&2; echo "test-install: quarry serve announced nothing" >&2; exit 1; }
(cd "$proj" && NODE_OPTIONS="--require \"$tmp/native.cjs\"" "$quarry" --verbose search --json "ranked result lists" \
  >"$tmp/served.json" 2>"$tmp/served.err")
kill "$serve"
wait "$serve" || true
serve=
grep -q 'asking the running server' "$tmp/served.err" || { cat "$tmp/served.err" >&2; echo "test-install: the search did not ask the server" >&2; exit 1; }
if grep 'probe:' "$tmp/served.err" >&2; then
  echo "test-install: a search sent to the server loaded a native module" >&2
  exit 1
fi
node -e '
  const paths = (f) => JSON.parse(require("fs").readFileSync(f, "utf8")).results.map((r) => r.path + ":" + r.startLine);
  if (JSON.stringify(paths(process.argv[1])) !== JSON.stringify(paths(process.argv[2])))
    throw new Error("test-install: the server answered otherwise than the index here");
' "$tmp/served.json" "$tmp/plain.json"
echo "test-install: a search sent to the running server (the same answer, no native module loaded)"
echo "test-install: ok"
