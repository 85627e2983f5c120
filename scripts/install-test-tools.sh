#!/usr/bin/env bash
# What the tests drive, from Debian's apt: Chromium for the web panel's test (playwright-core drives it at
# /usr/bin/chromium; never `npx playwright install`), and ripgrep, which `quarry grep` is compared with line for line.
# Does nothing when both are there.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-test-tools: ${missing[*]} missing and this user cannot install them: run 'apt-get install ${missing[*]}' as root" >&2
    exit 1
  fi
else SUDO=""; fi
echo "install-test-tools: installing ${missing[*]} from apt" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
command -v chromium >/dev/null
command -v rg >/dev/null
