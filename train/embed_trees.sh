#!/usr/bin/env bash
# Embeds every training tree with quarry's default local model (all-MiniLM-L6-v2), smallest tree first, at the lowest
# CPU priority. Each tree's index lives in its own .quarry/; quarry's indexing resumes where a killed run stopped and
# its embedding cache is keyed by content, so this script can be stopped and run again at any time (across sessions).
#   train/embed_trees.sh [/work/train-data/trees]
set -uo pipefail
cd "$(dirname "$0")/.."
# with the kernel's autogroups (one per session), nice only ranks processes within a session: lower this session's
# group too, or the embedding takes half the CPU from a foreground shell in another session
echo 19 >/proc/self/autogroup 2>/dev/null || true
trees=${1:-/work/train-data/trees}
log=${EMBED_LOG:-/work/train-data/logs/embed.log}
mkdir -p "$(dirname "$log")"
for dir in $(du -s "$trees"/*/ | sort -n | cut -f2); do
  name=$(basename "$dir")
  start=$(date +%s)
  if nice -n 19 node bin/quarry.js index "$dir" --quiet >>"$log" 2>&1; then
    echo "$(date -Is) $name done in $(($(date +%s) - start)) s" >>"$log"
  else
    echo "$(date -Is) $name FAILED (exit $?)" >>"$log"
  fi
done
echo "$(date -Is) all trees done" >>"$log"
