# Sourced by setup.sh and test-install.sh. Native modules (better-sqlite3, re2) compile from source when no prebuilt
# binary can be downloaded, and node-gyp then wants Node's headers, which it downloads unless its cache has them. The
# Node install ships them: put them where node-gyp's cache keeps a version's headers (its "devdir",
# ~/.cache/node-gyp/<version>, with the installVersion marker it checks), so nothing is downloaded and no npm config
# is set (npm 11 warns about an unknown `nodedir` config).
node_headers_for_gyp() {
  local prefix version dev
  prefix=$(node -p 'require("path").resolve(process.execPath, "..", "..")')
  version=$(node -p 'process.versions.node')
  dev="${XDG_CACHE_HOME:-$HOME/.cache}/node-gyp/$version"
  [ -f "$prefix/include/node/node.h" ] || return 0
  [ -f "$dev/include/node/node.h" ] && [ -f "$dev/installVersion" ] && return 0
  mkdir -p "$dev/include"
  ln -sfn "$prefix/include/node" "$dev/include/node"
  echo 11 >"$dev/installVersion"
}
node_headers_for_gyp
